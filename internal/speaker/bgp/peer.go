package bgp

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/steadylb/steadylb/internal/config"
)

// ErrSession is wrapped by every error about a Session's settings.
var ErrSession = errors.New("invalid BGP session")

// SessionError is an error about one Session's settings. It matches
// ErrSession, and names the session so that a caller can leave that one
// out and run the others (see RefusedSessions).
type SessionError struct {
	// Session is the session's name; empty for a session without one.
	Session string
	// Reason says what is wrong, starting with the field.
	Reason string
}

func (e *SessionError) Error() string {
	if e.Session == "" {
		return fmt.Sprintf("%s: %s", ErrSession, e.Reason)
	}
	return fmt.Sprintf("%s %q: %s", ErrSession, e.Session, e.Reason)
}

func (e *SessionError) Unwrap() error { return ErrSession }

// RefusedSessions are the names of the sessions err (from SetSessions)
// refuses, in the order err gives them: those of every SessionError it
// holds, joined or wrapped.
func RefusedSessions(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *SessionError:
			if e.Session != "" {
				out = append(out, e.Session)
			}
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// DefaultRestartTime is the graceful restart time this node asks its
// routers for (FRR's and MetalLB's default).
const DefaultRestartTime = 120 * time.Second

// The BGP defaults that a zero timer takes (RFC 4271 suggestions, also
// FRR's and MetalLB's).
const (
	defaultHoldTime    = 90 * time.Second
	defaultConnectTime = 120 * time.Second
)

// validate checks what GoBGP would reject later, so a bad Session is
// refused by SetSessions and harms no other session.
func (s Session) validate() error {
	fail := func(field, format string, args ...any) error {
		return &SessionError{Session: s.Name, Reason: field + ": " + fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Name == "":
		return &SessionError{Reason: "a session needs a name"}
	case !s.Address.IsValid() && s.Interface == "":
		return fail("address", "neither an address nor an interface")
	case s.Address.IsValid() && s.Interface != "":
		return fail("interface", "set together with address %s", s.Address)
	case s.MyASN == 0:
		return fail("myASN", "zero")
	case s.PeerASN == 0 && s.DynamicASN == config.DynamicASNNone:
		return fail("peerASN", "zero and no dynamicASN")
	case s.PeerASN != 0 && s.DynamicASN != config.DynamicASNNone:
		return fail("dynamicASN", "%q set together with peerASN %d", s.DynamicASN, s.PeerASN)
	case s.DynamicASN != config.DynamicASNNone && s.DynamicASN != config.DynamicASNInternal && s.DynamicASN != config.DynamicASNExternal:
		return fail("dynamicASN", "unknown mode %q", s.DynamicASN)
	case s.RouterID.IsValid() && !s.RouterID.Is4():
		return fail("routerID", "%s is not an IPv4 address", s.RouterID)
	case s.Source.IsValid() && s.Address.IsValid() && s.Source.Is4() != s.Address.Unmap().Is4():
		return fail("source", "%s is not of the address family of %s", s.Source, s.Address)
	case s.HoldTime != 0 && (s.HoldTime < 3*time.Second || s.HoldTime > 65535*time.Second):
		return fail("holdTime", "%v is outside 3s-65535s", s.HoldTime)
	case s.KeepaliveTime != 0 && s.KeepaliveTime > s.holdTime():
		return fail("keepaliveTime", "%v is longer than the hold time %v", s.KeepaliveTime, s.holdTime())
	case len(s.Password) > 80:
		return fail("password", "longer than the 80 bytes TCP MD5 allows")
	case len(s.VRF) >= 16 || strings.ContainsAny(s.VRF, "/ \t\n"):
		return fail("vrf", "%q is not a Linux device name", s.VRF)
	}
	return nil
}

// Equal reports whether two Sessions are the same session, settings
// included (a BFD profile compared by value, not by pointer).
func (s Session) Equal(o Session) bool {
	sb, ob := s.BFD, o.BFD
	s.BFD, o.BFD = nil, nil
	if s != o || (sb == nil) != (ob == nil) {
		return false
	}
	return sb == nil || *sb == *ob
}

func (s Session) holdTime() time.Duration {
	if s.HoldTime == 0 {
		return defaultHoldTime
	}
	return s.HoldTime
}

func (s Session) keepaliveTime() time.Duration {
	if s.KeepaliveTime == 0 {
		return s.holdTime() / 3
	}
	return s.KeepaliveTime
}

func (s Session) connectTime() time.Duration {
	if s.ConnectTime == 0 {
		return defaultConnectTime
	}
	return s.ConnectTime
}

// localASN is the ASN this node presents to the router.
func (s Session) localASN() uint32 {
	if s.LocalASN != 0 {
		return s.LocalASN
	}
	return s.MyASN
}

// internal reports an iBGP session: LocalPref is sent only there.
func (s Session) internal() bool {
	if s.DynamicASN != config.DynamicASNNone {
		return s.DynamicASN == config.DynamicASNInternal
	}
	return s.PeerASN == s.localASN()
}

// families are the address families the session carries: its own, and
// the other one too with DualStack. An unnumbered session runs over IPv6.
func (s Session) families() []bgppkt.Family {
	own, other := bgppkt.RF_IPv6_UC, bgppkt.RF_IPv4_UC
	if s.Address.IsValid() && s.Address.Unmap().Is4() {
		own, other = other, own
	}
	if s.DualStack {
		return []bgppkt.Family{own, other}
	}
	return []bgppkt.Family{own}
}

// carries reports whether the session sends prefixes of p's family.
func (s Session) carries(p netip.Prefix) bool {
	f := familyOf(p.Addr())
	for _, c := range s.families() {
		if c == f {
			return true
		}
	}
	return false
}

func familyOf(a netip.Addr) bgppkt.Family {
	if a.Unmap().Is4() {
		return bgppkt.RF_IPv4_UC
	}
	return bgppkt.RF_IPv6_UC
}

// routerID is the session's BGP identifier: RouterID, else the node's
// IPv4 address, else (an IPv6-only node) a hash of the node's name.
func (s Session) routerID(o Options) netip.Addr {
	switch {
	case s.RouterID.IsValid():
		return s.RouterID
	case o.NodeAddress.IsValid() && o.NodeAddress.Unmap().Is4():
		return o.NodeAddress.Unmap()
	}
	h := fnv.New32a()
	h.Write([]byte(o.NodeName))
	h.Write([]byte(o.NodeAddress.String()))
	b := h.Sum(nil)
	return netip.AddrFrom4([4]byte(b))
}

// peerConfig is GoBGP's neighbor configuration of s.
func (s Session) peerConfig(restartTime time.Duration, restarting bool) *api.Peer {
	p := &api.Peer{
		Conf: &api.PeerConf{
			PeerAsn:      s.PeerASN,
			LocalAsn:     s.localASN(),
			AuthPassword: s.Password,
		},
		Timers: &api.Timers{Config: &api.TimersConfig{
			HoldTime:          seconds(s.holdTime()),
			KeepaliveInterval: seconds(s.keepaliveTime()),
			ConnectRetry:      seconds(s.connectTime()),
		}},
		Transport: &api.Transport{RemotePort: uint32(s.Port)},
	}
	if s.Address.IsValid() {
		p.Conf.NeighborAddress = s.Address.Unmap().String()
	} else {
		p.Conf.NeighborInterface = s.Interface
	}
	if s.Source.IsValid() {
		p.Transport.LocalAddress = s.Source.Unmap().String()
	}
	// GoBGP binds its socket to this device (SO_BINDTODEVICE) before it
	// dials: in a VRF, that is what makes the kernel use the VRF's table.
	p.Transport.BindInterface = s.VRF
	if s.EBGPMultiHop {
		p.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: 255}
	}
	if s.GracefulRestart {
		// LocalRestarting sets the Restart State bit and, per family, the
		// Forwarding State bit: the router keeps the routes it holds as
		// stale (a router seeing no F bit must drop them at once, RFC 4724
		// 4.2) until our End-of-RIB, which GoBGP sends after the routes
		// the first Update put in place.
		p.GracefulRestart = &api.GracefulRestart{
			Enabled:         true,
			RestartTime:     uint32(seconds(restartTime)),
			LocalRestarting: restarting,
			// Waiting for the router's End-of-RIB is pointless for a
			// speaker that takes no routes; a short deferral bounds it.
			DeferralTime: 1,
		}
	}
	for _, f := range s.families() {
		a := &api.AfiSafi{Config: &api.AfiSafiConfig{
			Family:  apiutil.ToApiFamily(f.Afi(), f.Safi()),
			Enabled: true,
		}}
		if s.GracefulRestart {
			a.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		p.AfiSafis = append(p.AfiSafis, a)
	}
	return p
}

// seconds rounds d up to whole seconds, the unit BGP's timers use.
func seconds(d time.Duration) uint64 {
	return uint64((d + time.Second - 1) / time.Second)
}

// vrfLabel is the metrics' "vrf" label, MetalLB's: the VRF, or
// "default".
func (s Session) vrfLabel() string {
	if s.VRF == "" {
		return "default"
	}
	return s.VRF
}

// peerLabel is the metrics' "peer" label, as MetalLB's speaker writes it:
// the router's address and port.
func (s Session) peerLabel() string {
	port := s.Port
	if port == 0 {
		port = bgppkt.BGP_PORT
	}
	addr := s.Interface
	if s.Address.IsValid() {
		addr = s.Address.Unmap().String()
	}
	return fmt.Sprintf("%s:%d", addr, port)
}
