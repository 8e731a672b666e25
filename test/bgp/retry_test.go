package bgp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// retryConfig: one eBGP neighbor that also carries IPv6, with BFD when
// bfd is set.
func retryConfig(bfd bool) string {
	c := `router bgp 64500
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 198.51.100.2 timers 3 9
`
	if bfd {
		c += " neighbor 198.51.100.2 bfd\n"
	}
	return c + ` address-family ipv6 unicast
  neighbor 198.51.100.2 activate
 exit-address-family
!
`
}

// retrying is the metric of a step the Router retries, for the session
// to the lab's router.
func retrying(step string) string {
	return `steadylb_bgp_session_retrying{peer="198.51.100.1:179",step="` + step + `",vrf="default"}`
}

// TestResetWhoseReadvertisementFails: a session reset (its settings
// changed) must send the routes it had again and connect. Here that step
// fails: the session becomes dual-stack while the node's interface has no
// IPv6 address to give its IPv6 route as next hop. The Router keeps the
// session, reports the fault, and once the address is back re-sends both
// routes and connects, with nobody calling it again.
func TestResetWhoseReadvertisementFails(t *testing.T) {
	l := newLab(t, retryConfig(false))
	const v4, v6 = "203.0.113.10/32", "2001:db8:2::20/128"
	s := bgp.Session{Name: "reset", MyASN: 64501, PeerASN: 64500, Address: routerV4, Source: nodeV4,
		HoldTime: 9 * time.Second, ConnectTime: 5 * time.Second}
	// The IPv6 route is kept but not sent while the session is IPv4 only.
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{s},
		Routes: map[string][]bgp.Route{s.Name: {{Prefix: prefix(v4)}, {Prefix: prefix(v6)}}}})
	l.waitRoute(t, v4, true, 30*time.Second)
	before := l.peer(t, "ipv4Unicast", nodeV4.String()).ConnectionsEstablished

	l.node.IP(t, "addr", "del", nodeV6.String()+"/64", "dev", "eth0")
	s.DualStack = true
	rep := sp.do(t, map[string]any{"op": "sessions", "sessions": []bgp.Session{s}})
	t.Logf("SetSessions with the re-advertisement failing: %q", rep.Error)
	waitFor(t, "the failed re-advertisement reported", 10*time.Second, func() error {
		if v := sp.metric(t, retrying("routes")); v != 1 {
			return fmt.Errorf("%s = %g", retrying("routes"), v)
		}
		return nil
	})
	// The speaker calls again with the same sessions when a call failed;
	// that must not make the session look settled either.
	sp.do(t, map[string]any{"op": "sessions", "sessions": []bgp.Session{s}})
	l.waitRoute(t, v4, false, 30*time.Second)

	l.node.IP(t, "addr", "add", nodeV6.String()+"/64", "dev", "eth0", "nodad")
	waitFor(t, "the session re-established", 30*time.Second, func() error {
		if p := l.peer(t, "ipv4Unicast", nodeV4.String()); p.State != "Established" || p.ConnectionsEstablished <= before {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
	l.waitRoute(t, v4, true, 10*time.Second)
	paths := l.waitRoute(t, v6, true, 10*time.Second)
	if got := describe(paths[0]).NextHop; got != nodeV6.String() {
		t.Errorf("%s: next hop %s, want %s", v6, got, nodeV6)
	}
	if v := sp.metric(t, retrying("routes")); v != 0 {
		t.Errorf("%s = %g after the session recovered, want 0", retrying("routes"), v)
	}
}

// TestBFDAddedOnceTheRouterIsReachable: the BFD session needs the local
// address towards the router, which the kernel gives only once a route
// exists. A node without one when the session starts must get its BFD
// session when the route appears, and say so meanwhile.
func TestBFDAddedOnceTheRouterIsReachable(t *testing.T) {
	l := newLab(t, retryConfig(true))
	for _, a := range append(nodeExtra, nodeV4) {
		l.node.IP(t, "addr", "del", a.String()+"/24", "dev", "eth0")
	}
	const route = "203.0.113.11/32"
	s := bgp.Session{Name: "bfd", MyASN: 64501, PeerASN: 64500, Address: routerV4,
		HoldTime: 9 * time.Second, ConnectTime: 5 * time.Second, BFD: &bfd.Profile{}}
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{s.Name: {{Prefix: prefix(route)}}}})
	waitFor(t, "the failed BFD session reported", 10*time.Second, func() error {
		if v := sp.metric(t, retrying("bfd")); v != 1 {
			return fmt.Errorf("%s = %g", retrying("bfd"), v)
		}
		return nil
	})

	l.node.IP(t, "addr", "add", nodeV4.String()+"/24", "dev", "eth0")
	l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Established", 30*time.Second)
	l.waitRoute(t, route, true, 10*time.Second)
	l.waitBFD(t, "up", 20*time.Second)
	waitFor(t, "the BFD fault cleared", 5*time.Second, func() error {
		if v := sp.metric(t, retrying("bfd")); v != 0 {
			return fmt.Errorf("%s = %g", retrying("bfd"), v)
		}
		return nil
	})
}
