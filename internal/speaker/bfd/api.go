package bfd

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Errors of the Manager's methods; match with errors.Is.
var (
	ErrPeer          = errors.New("invalid BFD peer")
	ErrSessionExists = errors.New("BFD session already exists")
	ErrNoSession     = errors.New("no such BFD session")
)

// Key identifies a session: one local address talking to one remote
// address, single-hop or multi-hop, in one VRF, optionally through one
// interface.
type Key struct {
	Local, Remote netip.Addr
	// Interface, when set, pins the session to that interface: packets
	// leave by it and are accepted only from it. Required for a
	// link-local Remote (a zone on Remote fills it in). A multi-hop
	// session has none.
	Interface string
	// MultiHop runs the session as RFC 5883 describes: on port 4784,
	// accepting packets whose TTL is at least the profile's MinimumTTL.
	MultiHop bool
	// VRF is the VRF device the session's packets go through; empty for
	// the default VRF.
	VRF string
}

func (k Key) String() string {
	s := k.Local.String() + "->" + k.Remote.String()
	if k.Interface != "" {
		s += "%" + k.Interface
	}
	if k.MultiHop {
		s += " multi-hop"
	}
	if k.VRF != "" {
		s += " vrf " + k.VRF
	}
	return s
}

// transport is where the session's packets travel.
func (k Key) transport() Transport {
	return Transport{Family: familyOf(k.Remote), MultiHop: k.MultiHop, VRF: k.VRF}
}

// vrfLabel is the metrics' "vrf" label, MetalLB's: "default" outside a
// VRF.
func (k Key) vrfLabel() string {
	if k.VRF == "" {
		return "default"
	}
	return k.VRF
}

// peerLabel is the metrics' "peer" label: the remote address, as FRR
// shows it.
func (k Key) peerLabel() string {
	if k.Remote.IsLinkLocalUnicast() {
		return k.Remote.WithZone(k.Interface).String()
	}
	return k.Remote.String()
}

// Peer is a session to add: where it runs and how.
type Peer struct {
	Local, Remote netip.Addr
	Interface     string
	MultiHop      bool
	VRF           string
	Profile       Profile
}

// Key is the session's identity.
func (p Peer) Key() Key {
	return Key{Local: p.Local, Remote: p.Remote, Interface: p.Interface, MultiHop: p.MultiHop, VRF: p.VRF}
}

// normalize validates k and returns it in the form sessions are keyed by:
// IPv4 unmapped, no zones.
func (k Key) normalize() (Key, error) {
	if !k.Local.IsValid() || !k.Remote.IsValid() {
		return k, fmt.Errorf("%w %s: local and remote addresses are required", ErrPeer, k)
	}
	if zone := k.Remote.Zone(); zone != "" {
		if k.Interface != "" && k.Interface != zone {
			return k, fmt.Errorf("%w %s: remote zone %q and interface %q differ", ErrPeer, k, zone, k.Interface)
		}
		k.Interface = zone
	}
	k.Local, k.Remote = k.Local.Unmap().WithZone(""), k.Remote.Unmap().WithZone("")
	switch {
	case k.Local.Is4() != k.Remote.Is4():
		return k, fmt.Errorf("%w %s: local and remote address families differ", ErrPeer, k)
	case k.Local.IsUnspecified() || k.Remote.IsUnspecified():
		return k, fmt.Errorf("%w %s: unspecified address", ErrPeer, k)
	case k.Remote.IsMulticast() || k.Local.IsMulticast():
		return k, fmt.Errorf("%w %s: multicast address", ErrPeer, k)
	case k.Remote.IsLinkLocalUnicast() && k.Interface == "":
		return k, fmt.Errorf("%w %s: a link-local peer needs an interface", ErrPeer, k)
	case k.MultiHop && k.Interface != "":
		return k, fmt.Errorf("%w %s: a multi-hop session has no interface", ErrPeer, k)
	case k.MultiHop && k.Remote.IsLinkLocalUnicast():
		return k, fmt.Errorf("%w %s: a link-local peer is one hop away", ErrPeer, k)
	}
	return k, nil
}

// Event is one change of a session's state, reported to
// Options.OnStateChange.
type Event struct {
	Peer     Key
	Old, New State
	// Diag says why: DiagControlDetectionTimeExpired (the peer fell
	// silent), DiagNeighborSignaledDown (it said it is Down or
	// AdminDown), DiagAdministrativelyDown (RemoveSession); DiagNone when
	// coming Up.
	Diag Diag
	// RemoteState and RemoteDiag are what the peer last said of itself.
	RemoteState State
	RemoteDiag  Diag
}

// PeerAdminDown reports a session brought down by the peer on purpose.
// RFC 5882 section 3.2 asks clients not to treat that as a path failure.
func (e Event) PeerAdminDown() bool { return e.New == Down && e.RemoteState == AdminDown }

// Status is a snapshot of one session.
type Status struct {
	Peer                Key
	State, RemoteState  State
	LocalDiag           Diag
	RemoteDiag          Diag
	LocalDiscriminator  uint32
	RemoteDiscriminator uint32
	// TransmitInterval is the negotiated interval before jitter.
	TransmitInterval time.Duration
	// DetectionTime is how long the peer may stay silent; zero while
	// nothing has been heard from it.
	DetectionTime time.Duration
	// Polling: a Poll Sequence for our timers is waiting for its Final.
	Polling bool
}

func (s *session) status(k Key) Status {
	st := Status{
		Peer:                k,
		State:               s.state,
		RemoteState:         s.remoteState,
		LocalDiag:           s.localDiag,
		RemoteDiag:          s.remoteDiag,
		LocalDiscriminator:  s.localDiscr,
		RemoteDiscriminator: s.remoteDiscr,
		TransmitInterval:    s.txInterval(),
		Polling:             s.polling(),
	}
	if !s.detectAt.IsZero() {
		st.DetectionTime = s.detectionTime()
	}
	return st
}
