package bgp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// vrfConfig: FRR in its default table, one eBGP neighbor (the node, whose
// uplink is in a VRF), BFD at 300 ms x 3 and a 9 s hold time.
const vrfConfig = `router bgp 64500
 bgp router-id 198.51.100.1
 bgp log-neighbor-changes
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 198.51.100.2 timers 3 9
 neighbor 198.51.100.2 bfd
!
`

// requireVRF skips tb on a kernel without VRF devices (CONFIG_NET_VRF).
func requireVRF(tb testing.TB, l *lab) {
	tb.Helper()
	if out, err := l.node.Exec("link", "add", "vrf-probe", "type", "vrf", "table", "99"); err != nil {
		tb.Skipf("needs a kernel with VRF devices (CONFIG_NET_VRF): %v: %s", err, out)
	}
	l.node.IP(tb, "link", "del", "vrf-probe")
}

// intoVRF puts the node's uplink into a new VRF "red" (table 10): its
// connected routes move to that table, and the node's main table has no
// route to the router any more.
func (l *lab) intoVRF(tb testing.TB) {
	tb.Helper()
	l.node.IP(tb, "link", "add", "red", "type", "vrf", "table", "10")
	l.node.IP(tb, "link", "set", "red", "up")
	l.node.IP(tb, "link", "set", "eth0", "master", "red")
	waitFor(tb, "the router reachable in VRF red", 10*time.Second, func() error {
		if out := l.node.IP(tb, "route", "show", "vrf", "red"); !strings.Contains(out, "198.51.100.0/24") {
			return fmt.Errorf("VRF red's table: %q", out)
		}
		return nil
	})
}

func vrfSession() bgp.Session {
	return bgp.Session{Name: "red", MyASN: 64501, PeerASN: 64500, Address: routerV4, VRF: "red",
		HoldTime: 9 * time.Second, ConnectTime: 5 * time.Second, BFD: &bfd.Profile{}}
}

// TestVRF: a session whose VRF holds the node's uplink, FRR in its
// default table: the session and BFD come up through the VRF (the node's
// main table has no route to the router), FRR gets the route with the
// node's VRF address as next hop and routes to it, the node's main
// table is left as it was, the metrics carry vrf="red", and BFD in the
// VRF takes the session down on a link cut as it does outside one.
func TestVRF(t *testing.T) {
	l := newLab(t, vrfConfig)
	requireVRF(t, l)
	l.intoVRF(t)
	mainV4, mainV6 := l.node.IP(t, "route", "show", "table", "main"), l.node.IP(t, "-6", "route", "show", "table", "main")
	if strings.Contains(mainV4, "198.51.100.") {
		t.Fatalf("the node's main table still reaches the router: %q", mainV4)
	}
	const route, service = "203.0.113.72/32", "203.0.113.72"
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{vrfSession()}, Routes: map[string][]bgp.Route{"red": {{Prefix: prefix(route)}}}})
	l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 30*time.Second)
	paths := l.waitRoute(t, route, true, 10*time.Second)
	if got := describe(paths[0]).NextHop; got != nodeV4.String() {
		t.Errorf("next hop %s, want the node's VRF address %s", got, nodeV4)
	}
	l.waitBFD(t, "up", 20*time.Second)

	t.Run("the router forwards to the node's VRF address", func(t *testing.T) {
		l.waitKernelRoute(t, route, 10*time.Second)
		if out := l.router.IP(t, "route", "get", service); !strings.Contains(out, "via "+nodeV4.String()) {
			t.Errorf("the router's path to %s: %q, want via %s", service, out, nodeV4)
		}
	})

	t.Run("the node's main table is untouched", func(t *testing.T) {
		if got := l.node.IP(t, "route", "show", "table", "main"); got != mainV4 {
			t.Errorf("IPv4 main table changed from %q to %q", mainV4, got)
		}
		if got := l.node.IP(t, "-6", "route", "show", "table", "main"); got != mainV6 {
			t.Errorf("IPv6 main table changed from %q to %q", mainV6, got)
		}
	})

	t.Run("metrics carry the VRF", func(t *testing.T) {
		waitFor(t, "BFD up for the Router too", 10*time.Second, func() error {
			if v := sp.metric(t, `metallb_bfd_session_up{peer="198.51.100.1",vrf="red"}`); v != 1 {
				return fmt.Errorf("metallb_bfd_session_up = %g", v)
			}
			return nil
		})
		if v := sp.metric(t, `metallb_bgp_session_up{peer="198.51.100.1:179",vrf="red"}`); v != 1 {
			t.Errorf(`metallb_bgp_session_up{vrf="red"} = %g, want 1`, v)
		}
	})

	t.Run("BFD in the VRF takes the session down on a link cut", func(t *testing.T) {
		l.cut(t)
		start := time.Now()
		// The hold time is 9 s: within 3 s only BFD can have done it.
		waitFor(t, "the Router's session down", 3*time.Second, func() error {
			if sp.isEstablished("red") {
				return fmt.Errorf("still established")
			}
			return nil
		})
		t.Logf("down %v after the cut; bfdd %v", time.Since(start).Round(time.Millisecond), l.bfdDownSince(t, start).Round(time.Millisecond))
		l.restore(t)
		l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 30*time.Second)
		l.waitRoute(t, route, true, 10*time.Second)
	})
}

// TestVRFAppearsLater: a session whose VRF device does not exist yet is
// kept, reported (steadylb_bgp_session_retrying{step="vrf"}), and
// connects once the VRF appears.
func TestVRFAppearsLater(t *testing.T) {
	l := newLab(t, vrfConfig)
	requireVRF(t, l)
	const route = "203.0.113.73/32"
	s := vrfSession()
	s.BFD = nil
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{"red": {{Prefix: prefix(route)}}}})
	step := `steadylb_bgp_session_retrying{peer="198.51.100.1:179",step="vrf",vrf="red"}`
	waitFor(t, "the missing VRF reported", 10*time.Second, func() error {
		if v := sp.metric(t, step); v != 1 {
			return fmt.Errorf("%s = %g", step, v)
		}
		return nil
	})
	l.intoVRF(t)
	l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 30*time.Second)
	l.waitRoute(t, route, true, 10*time.Second)
	if v := sp.metric(t, step); v != 0 {
		t.Errorf("%s = %g once the VRF exists, want 0", step, v)
	}
}

// TestBoundToDevice runs where the kernel has no VRF devices too: what a
// session in a VRF relies on is that its sockets are bound to a device
// (SO_BINDTODEVICE: GoBGP's TCP socket, the BFD sockets, the local
// address lookup), so the kernel routes them through that device's
// routes. Here the node's main table sends the router's address into a
// dead end (a /32 on a dummy device, more specific than the uplink's
// /24; a veth whose far end goes nowhere): a session bound to the uplink still comes up, with BFD, and its
// route carries the uplink's address as next hop. Its device is missing
// at first (the uplink has another name): the session is reported and
// connects once the device appears.
func TestBoundToDevice(t *testing.T) {
	l := newLab(t, vrfConfig)
	l.node.IP(t, "link", "add", "deadend", "type", "veth", "peer", "name", "deadend-end")
	l.node.IP(t, "link", "set", "deadend-end", "up")
	l.node.IP(t, "link", "set", "deadend", "up")
	l.node.IP(t, "route", "add", routerV4.String()+"/32", "dev", "deadend")
	l.node.IP(t, "link", "set", "eth0", "down")
	l.node.IP(t, "link", "set", "eth0", "name", "uplink")
	const route = "203.0.113.74/32"
	s := vrfSession()
	s.VRF = "eth0"
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{"red": {{Prefix: prefix(route)}}}})
	step := `steadylb_bgp_session_retrying{peer="198.51.100.1:179",step="vrf",vrf="eth0"}`
	waitFor(t, "the missing device reported", 10*time.Second, func() error {
		if v := sp.metric(t, step); v != 1 {
			return fmt.Errorf("%s = %g", step, v)
		}
		return nil
	})

	l.node.IP(t, "link", "set", "uplink", "name", "eth0")
	l.node.IP(t, "link", "set", "eth0", "up")
	l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 30*time.Second)
	paths := l.waitRoute(t, route, true, 10*time.Second)
	if got := describe(paths[0]).NextHop; got != nodeV4.String() {
		t.Errorf("next hop %s, want the uplink's address %s", got, nodeV4)
	}
	l.waitBFD(t, "up", 20*time.Second)
	if v := sp.metric(t, step); v != 0 {
		t.Errorf("%s = %g once the device exists, want 0", step, v)
	}
	if out := l.node.IP(t, "route", "get", routerV4.String()); !strings.Contains(out, "deadend") {
		t.Errorf("the main table no longer sends the router's address into the dead end: %q", out)
	}
}
