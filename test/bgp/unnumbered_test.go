package bgp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// zebra sends router advertisements on eth0, so the node learns the
// router's link-local address. bgpd's own unnumbered neighbor would wait
// for the node's advertisements, which a node does not send, so bgpd is
// given the node's link-local address instead: the node's side is the
// one under test.
const (
	unnumberedZebra = `interface eth0
 ipv6 nd ra-interval 1
 no ipv6 nd suppress-ra
!
`
	unnumberedBGP = `router bgp 64500
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
!
`
)

func TestUnnumbered(t *testing.T) {
	l := newLabZebra(t, unnumberedBGP, unnumberedZebra)
	l.node.WaitLinkLocal(t, "eth0")
	nodeLL := linkLocal(t, l.node.IP(t, "-6", "addr", "show", "dev", "eth0", "scope", "link"))
	l.frr.VTY(t, "bgpd", "configure terminal", "router bgp 64500",
		"neighbor "+nodeLL+" remote-as external", "neighbor "+nodeLL+" interface eth0",
		"address-family ipv6 unicast", "neighbor "+nodeLL+" activate")
	sp := l.startSpeaker(t, routerConfig{})
	waitFor(t, "the router's link-local address in the node's neighbor table", 20*time.Second, func() error {
		if out := l.node.IP(t, "-6", "neigh", "show", "dev", "eth0"); !strings.Contains(out, "fe80:") {
			return fmt.Errorf("neighbors: %q", out)
		}
		return nil
	})
	s := bgp.Session{Name: "unnumbered", MyASN: 64501, PeerASN: 64500, Interface: "eth0", ConnectTime: 5 * time.Second}
	sp.setSessions(t, s)
	const route = "2001:db8:3::30/128"
	sp.update(t, s.Name, []bgp.Route{{Prefix: prefix(route)}})
	l.waitPeer(t, "ipv6Unicast", nodeLL, "Established", 30*time.Second)
	l.waitRoute(t, route, true, 10*time.Second)
	if got := sp.metric(t, `metallb_bgp_session_up{peer="eth0:179",vrf="default"}`); got != 1 {
		t.Errorf("metallb_bgp_session_up for eth0 = %g, want 1", got)
	}
}

// linkLocal finds the fe80:: address in "ip addr" output.
func linkLocal(t *testing.T, out string) string {
	t.Helper()
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "fe80:") {
			return strings.TrimSuffix(f, "/64")
		}
	}
	t.Fatalf("no link-local address in %q", out)
	return ""
}
