package bgp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// bfdConfig: bgpd's neighbor runs BFD at FRR's defaults (300 ms x 3, as
// MetalLB's BFDProfile) and a 9 s hold time, so a BFD-driven teardown
// shows as much faster than the hold timer.
const bfdConfig = `router bgp 64500
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 198.51.100.2 timers 3 9
 neighbor 198.51.100.2 bfd
!
`

func bfdSession() bgp.Session {
	return bgp.Session{Name: "bfd", MyASN: 64501, PeerASN: 64500, Address: routerV4, HoldTime: 9 * time.Second,
		ConnectTime: 5 * time.Second, BFD: &bfd.Profile{}}
}

func TestBFD(t *testing.T) {
	l := newLab(t, bfdConfig)
	const route = "203.0.113.70/32"
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{bfdSession()},
		Routes: map[string][]bgp.Route{"bfd": {{Prefix: prefix(route)}}}})
	l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 20*time.Second)
	l.waitRoute(t, route, true, 10*time.Second)
	l.waitBFD(t, "up", 10*time.Second)
	// FRR replaces its BFD session once the BGP session is up (a Down
	// the Router must not take for a failure): count from after that.
	const downEvents = `metallb_bfd_session_down_events{peer="198.51.100.1",vrf="default"}`
	waitFor(t, "BFD up again after FRR's replacement", 10*time.Second, func() error {
		if sp.metric(t, `metallb_bfd_session_up{peer="198.51.100.1",vrf="default"}`) != 1 {
			return fmt.Errorf("down")
		}
		return nil
	})
	downBefore := sp.metric(t, downEvents)

	t.Run("cutting the link tears the session down on both sides", func(t *testing.T) {
		l.cut(t)
		start := time.Now()
		l.waitRoute(t, route, false, 5*time.Second)
		t.Logf("bgpd dropped the route %v after the cut", time.Since(start).Round(time.Millisecond))
		// Our BGP hold time is 9 s: within 3 s only BFD can have done it.
		waitFor(t, "the Router's session down", 3*time.Second, func() error {
			if sp.isEstablished("bfd") {
				return fmt.Errorf("still established")
			}
			return nil
		})
		if p := l.peer(t, "ipv4Unicast", nodeV4.String()); p.State == "Established" {
			t.Errorf("bgpd's neighbor is still %s", p.State)
		}
	})

	t.Run("restoring the link brings BFD, the session and the route back", func(t *testing.T) {
		l.restore(t)
		l.waitBFD(t, "up", 15*time.Second)
		l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 30*time.Second)
		l.waitRoute(t, route, true, 10*time.Second)
		waitFor(t, "the Router's session up", 5*time.Second, func() error {
			if !sp.isEstablished("bfd") {
				return fmt.Errorf("not established")
			}
			return nil
		})
	})

	t.Run("BFD metrics", func(t *testing.T) {
		label := `{peer="198.51.100.1",vrf="default"}`
		if got := sp.metric(t, "metallb_bfd_session_up"+label); got != 1 {
			t.Errorf("metallb_bfd_session_up%s = %g, want 1", label, got)
		}
		if got := sp.metric(t, downEvents); got != downBefore+1 {
			t.Errorf("%s = %g, want %g", downEvents, got, downBefore+1)
		}
	})
}

// waitBFD waits until bfdd's session with the node is in status.
func (l *lab) waitBFD(tb testing.TB, status string, limit time.Duration) {
	tb.Helper()
	waitFor(tb, "bfdd's session "+status, limit, func() error {
		p, ok := l.frr.BFDPeers(tb)[nodeV4.String()]
		if !ok || p.Status != status {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
}

// waitBFDFast waits until bfdd's session is up and bfdd has our 300 ms
// intervals: a session that has just come up still runs at the 1 s it
// sends at while down, until a poll sequence confirms the faster timers.
func (l *lab) waitBFDFast(tb testing.TB, limit time.Duration) {
	tb.Helper()
	waitFor(tb, "bfdd's session up at 300 ms", limit, func() error {
		p, ok := l.frr.BFDPeers(tb)[nodeV4.String()]
		if !ok || p.Status != "up" || p.RemoteTransmitInterval != 300 || p.RemoteReceiveInterval != 300 {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
}
