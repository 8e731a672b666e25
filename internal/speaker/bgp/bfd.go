package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

// addBFD starts the BFD session of a session that has BFD set, once the
// neighbor is added (an unnumbered router's address is known only then).
// Its local address is the session's: Source, or the kernel's choice
// towards the router. An eBGP multi-hop session, and an iBGP one whose
// router is on no network this node shares, run multi-hop BFD (RFC 5883),
// as FRR decides for its side; the others single-hop, which only a
// directly connected router can answer.
func (s *Sessions) addBFD(ctx context.Context, r *runner) error {
	if r.cfg.BFD == nil || !r.connected || r.bfdKey != nil {
		return nil
	}
	remote, err := netip.ParseAddr(r.neighbor)
	if err != nil {
		return fmt.Errorf("session %q: BFD: router address %q: %w", r.cfg.Name, r.neighbor, err)
	}
	remote = remote.Unmap()
	local, err := localAddressTo(remote, r.cfg.Source, r.cfg.VRF)
	if err != nil {
		return fmt.Errorf("session %q: BFD: %w", r.cfg.Name, err)
	}
	multiHop := r.cfg.EBGPMultiHop
	if r.cfg.internal() && !remote.IsLinkLocalUnicast() {
		shared, err := onSharedNetwork(remote)
		if err != nil {
			return fmt.Errorf("session %q: BFD: %w", r.cfg.Name, err)
		}
		multiHop = !shared
	}
	p := bfd.Peer{Local: local, Remote: remote.WithZone(""), Interface: r.cfg.Interface, MultiHop: multiHop,
		VRF: r.cfg.VRF, Profile: *r.cfg.BFD}
	if remote.Zone() != "" && p.Interface == "" && !p.MultiHop {
		p.Interface = remote.Zone()
	}
	if err := s.bfd.AddSession(ctx, p); err != nil {
		return fmt.Errorf("session %q: BFD: %w", r.cfg.Name, err)
	}
	k := p.Key()
	r.bfdKey = &k
	s.bfdMu.Lock()
	s.byBFD[k] = r
	s.bfdMu.Unlock()
	r.log.Info("BFD session added", "bfd", k.String())
	return nil
}

// dropBFD removes a session's BFD session, if it has one.
func (s *Sessions) dropBFD(ctx context.Context, r *runner) {
	if r.bfdKey == nil {
		return
	}
	k := *r.bfdKey
	s.bfdMu.Lock()
	delete(s.byBFD, k)
	s.bfdMu.Unlock()
	if err := s.bfd.RemoveSession(ctx, k); err != nil && !errors.Is(err, bfd.ErrNoSession) {
		r.log.Error(err, "remove the BFD session", "bfd", k.String())
	}
	r.bfdKey = nil
}

// OnBFDEvent couples BFD to BGP: when BFD declares the path down, the BGP
// session is shut (GoBGP closes it and stops reconnecting), and when BFD
// is up again it is enabled.
func (s *Sessions) OnBFDEvent(ev bfd.Event) {
	s.bfdMu.Lock()
	r := s.byBFD[ev.Peer]
	s.bfdMu.Unlock()
	if r == nil {
		return
	}
	ctx := r.ctx
	switch {
	case ev.New == bfd.Up:
		if !r.setBFDDown(false) {
			return
		}
		r.log.Info("BFD is up again: enabling the BGP session")
		if err := r.enable(ctx); err != nil {
			r.log.Error(err, "enable the BGP session after BFD came up")
		}
	case pathFailed(ev):
		if r.setBFDDown(true) {
			return
		}
		r.log.Info("BFD declared the path down: shutting the BGP session", "diag", ev.Diag.String())
		if err := r.shutdown(ctx, "BFD down"); err != nil {
			r.log.Error(err, "shut the BGP session after BFD went down")
		}
		// The session may not have noticed yet (nothing reaches the
		// router); it is down for us from now.
		r.setUp(false)
	}
}

// setBFDDown records BFD's verdict and returns the previous one.
func (r *runner) setBFDDown(down bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.bfdDown
	r.bfdDown = down
	return was
}

// pathFailed tells a failed path from a peer that merely restarted its
// BFD session: our detection time expired, or the peer says Down because
// its own expired or its path failed. A peer that says Down for another
// reason is reachable, so the BGP session stays: AdminDown (RFC 5882 3.2
// asks not to treat it as a failure), and FRR, which replaces its BFD
// session (Down, diag "neighbor signaled down") when a BGP session comes
// up with a new local address.
func pathFailed(ev bfd.Event) bool {
	if ev.Old != bfd.Up || ev.New == bfd.Up {
		return false
	}
	if ev.Diag == bfd.DiagControlDetectionTimeExpired {
		return true
	}
	switch ev.RemoteDiag {
	case bfd.DiagControlDetectionTimeExpired, bfd.DiagEchoFunctionFailed, bfd.DiagForwardingPlaneReset,
		bfd.DiagPathDown, bfd.DiagConcatenatedPathDown, bfd.DiagReverseConcatenatedPathDown:
		return ev.RemoteState != bfd.AdminDown
	}
	return false
}
