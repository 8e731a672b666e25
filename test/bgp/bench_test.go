package bgp_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// updateConfig: one iBGP neighbor over IPv6.
const updateConfig = `router bgp 64500
 bgp router-id 198.51.100.1
 neighbor 2001:db8::2 remote-as 64500
 address-family ipv6 unicast
  neighbor 2001:db8::2 activate
 exit-address-family
!
`

// BenchmarkUpdate measures one Update (one route advertised, the previous
// one withdrawn) on a session established with bgpd that already
// advertises 10 or 10,000 routes: its cost must not depend on them.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run("advertised="+strconv.Itoa(n), func(b *testing.B) {
			l := newLab(b, updateConfig)
			routes := make([]bgp.Route, n)
			base := netip.MustParseAddr("2001:db8:1::").As16()
			for i := range routes {
				a := base
				a[12], a[13], a[14], a[15] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
				routes[i] = bgp.Route{Prefix: netip.PrefixFrom(netip.AddrFrom16(a), 128), Communities: []uint32{community(1)}}
			}
			s := bgp.Session{Name: "v6", MyASN: 64500, PeerASN: 64500, Address: routerV6, ConnectTime: 5 * time.Second}
			sp := l.startSpeaker(b, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{"v6": routes}})
			l.waitReceived(b, n, 60*time.Second)

			b.ResetTimer()
			sp.must(b, map[string]any{"op": "bench", "session": "v6", "iterations": b.N})
			b.StopTimer()
			// Measured something real: bgpd holds the n routes and the last
			// one the loop advertised.
			l.waitReceived(b, n+1, 30*time.Second)
			last := fmt.Sprintf("2001:db8:ffff::%x/128", b.N-1)
			if b.N-1 > 0xffff {
				last = fmt.Sprintf("2001:db8:ffff::%x:%x/128", (b.N-1)>>16, (b.N-1)&0xffff)
			}
			l.waitRoute(b, last, true, 30*time.Second)
		})
	}
}

// waitReceived waits until bgpd holds n prefixes from the node.
func (l *lab) waitReceived(tb testing.TB, n int, limit time.Duration) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("bgpd holding %d prefixes", n), limit, func() error {
		if p := l.peer(tb, "ipv6Unicast", nodeV6.String()); p.State != "Established" || p.PfxRcd != n {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
}

// linkCutConfig: one eBGP neighbor with a 9 s hold time, and BFD at
// FRR's (and MetalLB's) defaults, 300 ms x 3, when bfd is set.
func linkCutConfig(withBFD bool) string {
	c := `router bgp 64500
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 198.51.100.2 timers 3 9
`
	if withBFD {
		c += " neighbor 198.51.100.2 bfd\n"
	}
	return c + "!\n"
}

// BenchmarkLinkCut measures, over several trials, the time from cutting
// the node's link (its switch port stops forwarding; no carrier changes)
// until bgpd has removed the node's route: detected by BFD at 300 ms x 3
// (each trial starts once bfdd runs at those timers), or, without BFD, by
// the 9 s hold timer. bgpd is polled through vtysh, which adds a few
// milliseconds.
func BenchmarkLinkCut(b *testing.B) {
	for _, tc := range []struct {
		name   string
		bfd    bool
		trials int
	}{{"bfd-300msx3", true, 20}, {"holdtime-9s", false, 5}} {
		b.Run(tc.name, func(b *testing.B) {
			l := newLab(b, linkCutConfig(tc.bfd))
			const route = "203.0.113.90/32"
			s := bfdSession()
			if !tc.bfd {
				s.BFD = nil
			}
			l.startSpeaker(b, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{s.Name: {{Prefix: prefix(route)}}}})
			var took []time.Duration
			for range b.N * tc.trials {
				l.waitPeer(b, "ipv4Unicast", nodeV4.String(), "Established", 60*time.Second)
				l.waitRoute(b, route, true, 30*time.Second)
				if tc.bfd {
					l.waitBFDFast(b, 30*time.Second)
				}
				start := time.Now()
				l.cut(b)
				l.waitRoute(b, route, false, 30*time.Second)
				took = append(took, time.Since(start))
				l.restore(b)
			}
			slices.Sort(took)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[(len(took)*99)/100]), "p99-ms")
			b.ReportMetric(ms(took[len(took)-1]), "max-ms")
			b.ReportMetric(float64(len(took)), "trials")
			b.Logf("%s: %v", tc.name, took)
		})
	}
}
