package bgp_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/netns"
)

// The multi-hop lab: the node and a plain Linux router ("mid") share the
// switch's bridge; mid forwards to FRR over a second link; FRR peers from
// a loopback address, two hops from the node.
var (
	midNodeSide  = netip.MustParseAddr("198.51.100.1")
	midFRRSide   = netip.MustParseAddr("198.51.100.65")
	frrLink      = netip.MustParseAddr("198.51.100.66")
	frrLoopback  = netip.MustParseAddr("198.51.100.200")
	multihopNode = nodeV4 // 198.51.100.2
)

// multihopConfig: eBGP multi-hop from FRR's loopback to the node, with
// BFD (multi-hop, as bgpd chooses for a multi-hop neighbor) at 300 ms x 3
// and a 9 s hold time, so BFD's teardown shows as much faster.
const multihopConfig = `router bgp 64500
 bgp router-id 198.51.100.200
 bgp log-neighbor-changes
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 198.51.100.2 ebgp-multihop 2
 neighbor 198.51.100.2 update-source 198.51.100.200
 neighbor 198.51.100.2 timers 3 9
 neighbor 198.51.100.2 bfd
!
`

// newMultihopLab builds the multi-hop lab and starts zebra, bgpd (with
// bgpdConfig) and bfdd in FRR's namespace. cut and restore act on the
// node's switch port, as in the single-hop lab.
func newMultihopLab(tb testing.TB, bgpdConfig string) *lab {
	tb.Helper()
	frr.Require(tb, "bgpd", "bfdd", "zebra")
	l := &lab{router: netns.New(tb, "bgp-rtr"), node: netns.New(tb, "bgp-node"), sw: netns.New(tb, "bgp-sw")}
	mid := netns.New(tb, "bgp-mid")
	l.sw.IP(tb, "link", "add", "br0", "type", "bridge")
	netns.Veth(tb, l.sw, "to-mid", mid, "eth0")
	netns.Veth(tb, l.sw, "to-node", l.node, "eth0")
	for _, port := range []string{"to-mid", "to-node"} {
		l.sw.IP(tb, "link", "set", port, "master", "br0")
	}
	l.sw.IP(tb, "link", "set", "br0", "up")
	netns.Veth(tb, mid, "eth1", l.router, "eth0")
	mid.Sysctl(tb, "net.ipv4.ip_forward", "1")
	mid.IP(tb, "addr", "add", midNodeSide.String()+"/26", "dev", "eth0")
	mid.IP(tb, "addr", "add", midFRRSide.String()+"/26", "dev", "eth1")
	mid.IP(tb, "route", "add", frrLoopback.String()+"/32", "via", frrLink.String())
	l.router.IP(tb, "addr", "add", frrLink.String()+"/26", "dev", "eth0")
	l.router.IP(tb, "addr", "add", frrLoopback.String()+"/32", "dev", "lo")
	l.router.IP(tb, "route", "add", "198.51.100.0/26", "via", midFRRSide.String())
	l.node.IP(tb, "addr", "add", multihopNode.String()+"/26", "dev", "eth0")
	l.node.IP(tb, "route", "add", "default", "via", midNodeSide.String())
	l.frr = frr.Start(tb, l.router, map[string]string{
		"zebra": "",
		"bfdd":  "debug bfd peer\n",
		"bgpd":  bgpdConfig,
	})
	return l
}

func multihopSession() bgp.Session {
	return bgp.Session{Name: "multihop", MyASN: 64501, PeerASN: 64500, Address: frrLoopback, EBGPMultiHop: true,
		HoldTime: 9 * time.Second, ConnectTime: 5 * time.Second, BFD: &bfd.Profile{}}
}

// TestMultihopBFD: eBGP multi-hop to a loopback two hops away, with
// multi-hop BFD on both sides: the sessions come up (bfdd agrees it is a
// multi-hop session), a cut link is detected by BFD rather than by the
// 9 s hold time on both sides, and everything comes back with the link.
func TestMultihopBFD(t *testing.T) {
	l := newMultihopLab(t, multihopConfig)
	const route = "203.0.113.71/32"
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{multihopSession()},
		Routes: map[string][]bgp.Route{"multihop": {{Prefix: prefix(route)}}}})
	l.waitPeer(t, "ipv4Unicast", multihopNode.String(), "Established", 30*time.Second)
	l.waitRoute(t, route, true, 10*time.Second)
	l.waitBFD(t, "up", 20*time.Second)
	p := l.frr.BFDPeers(t)[multihopNode.String()]
	if !p.Multihop || p.Local != frrLoopback.String() {
		t.Fatalf("bfdd's session: %+v, want multi-hop from %s", p, frrLoopback)
	}
	label := `{peer="198.51.100.200",vrf="default"}`
	waitFor(t, "our BFD session up", 10*time.Second, func() error {
		if v := sp.metric(t, "metallb_bfd_session_up"+label); v != 1 {
			return fmt.Errorf("metallb_bfd_session_up%s = %g", label, v)
		}
		return nil
	})

	t.Run("a cut link is detected by BFD on both sides", func(t *testing.T) {
		l.cut(t)
		start := time.Now()
		// The hold time is 9 s: within 3 s only BFD can have done it.
		waitFor(t, "the Router's session down", 3*time.Second, func() error {
			if sp.isEstablished("multihop") {
				return fmt.Errorf("still established")
			}
			return nil
		})
		t.Logf("the Router saw the session down %v after the cut", time.Since(start).Round(time.Millisecond))
		t.Logf("bfdd declared it down %v after the cut", l.bfdDownSince(t, start).Round(time.Millisecond))
		l.waitRoute(t, route, false, 3*time.Second)
	})

	t.Run("restoring the link brings BFD, the session and the route back", func(t *testing.T) {
		l.restore(t)
		l.waitBFD(t, "up", 15*time.Second)
		l.waitPeer(t, "ipv4Unicast", multihopNode.String(), "Established", 30*time.Second)
		l.waitRoute(t, route, true, 10*time.Second)
	})
}

// TestMultihopMinimumTTL: a profile's minimumTtl is enforced. FRR's
// packets cross one router and arrive with TTL 254; a profile asking for
// 255 discards them all, so our side never comes up, while the default
// (254) does.
func TestMultihopMinimumTTL(t *testing.T) {
	l := newMultihopLab(t, multihopConfig)
	s := multihopSession()
	s.BFD = &bfd.Profile{MinimumTTL: 255}
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{s.Name: nil}})
	l.waitPeer(t, "ipv4Unicast", multihopNode.String(), "Established", 30*time.Second)
	const discarded = `steadylb_bfd_control_packets_discarded_total{reason="ttl"}`
	// bfdd sends once a second while down: 3 discarded packets show we
	// were listening long enough to have come up.
	waitFor(t, "bfdd's packets discarded for their TTL", 20*time.Second, func() error {
		if v := sp.metric(t, discarded); v < 3 {
			return fmt.Errorf("%s = %g", discarded, v)
		}
		return nil
	})
	if v := sp.metric(t, `metallb_bfd_session_up{peer="198.51.100.200",vrf="default"}`); v != 0 {
		t.Errorf("our BFD session up (%g) although every packet's TTL is below the minimum", v)
	}

	s.BFD = &bfd.Profile{}
	sp.setSessions(t, s)
	sp.update(t, s.Name, nil)
	l.waitBFD(t, "up", 20*time.Second)
}

// ibgpLoopbackConfig: iBGP from FRR's loopback to the node, two hops
// away, with BFD: bgpd runs it multi-hop (the node is on no network it
// shares), so the node must too.
const ibgpLoopbackConfig = `router bgp 64500
 bgp router-id 198.51.100.200
 neighbor 198.51.100.2 remote-as 64500
 neighbor 198.51.100.2 update-source 198.51.100.200
 neighbor 198.51.100.2 timers 3 9
 neighbor 198.51.100.2 bfd
!
`

// TestIBGPLoopbackBFD: an iBGP session to a router two hops away runs
// multi-hop BFD without ebgpMultiHop (which iBGP does not take), as FRR
// does on its side, so the session comes up and a cut is detected.
func TestIBGPLoopbackBFD(t *testing.T) {
	l := newMultihopLab(t, ibgpLoopbackConfig)
	const route = "203.0.113.75/32"
	s := bgp.Session{Name: "ibgp", MyASN: 64500, PeerASN: 64500, Address: frrLoopback,
		HoldTime: 9 * time.Second, ConnectTime: 5 * time.Second, BFD: &bfd.Profile{}}
	sp := l.startSpeaker(t, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{s.Name: {{Prefix: prefix(route)}}}})
	l.waitPeer(t, "ipv4Unicast", multihopNode.String(), "Established", 30*time.Second)
	l.waitRoute(t, route, true, 10*time.Second)
	l.waitBFD(t, "up", 20*time.Second)
	if p := l.frr.BFDPeers(t)[multihopNode.String()]; !p.Multihop {
		t.Fatalf("bfdd's session is not multi-hop: %+v", p)
	}
	l.cut(t)
	waitFor(t, "the Router's session down", 3*time.Second, func() error {
		if sp.isEstablished(s.Name) {
			return fmt.Errorf("still established")
		}
		return nil
	})
}
