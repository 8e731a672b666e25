package bgp_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
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
 bgp log-neighbor-changes
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
// until the router has removed the node's route: detected by BFD at
// 300 ms x 3 (each trial starts once bfdd runs at those timers), or,
// without BFD, by the 9 s hold timer. It reports when bfdd declared the
// session down and bgpd the neighbor (their logs' millisecond times), and
// when the route was first seen gone from the router's kernel table and
// from bgpd's table (polled: ip route, then vtysh, which takes some
// milliseconds each).
//
// The multi-hop case runs eBGP multi-hop to a loopback of FRR two hops
// away (newMultihopLab), with multi-hop BFD at 300 ms x 3; the cut is the
// same, on the node's switch port.
func BenchmarkLinkCut(b *testing.B) {
	for _, tc := range []struct {
		name          string
		bfd, multihop bool
		trials        int
	}{{"bfd-300msx3", true, false, 20}, {"multihop-bfd-300msx3", true, true, 20}, {"holdtime-9s", false, false, 5}} {
		b.Run(tc.name, func(b *testing.B) {
			var l *lab
			s := bfdSession()
			if tc.multihop {
				l, s = newMultihopLab(b, multihopConfig), multihopSession()
			} else {
				l = newLab(b, linkCutConfig(tc.bfd))
			}
			const route = "203.0.113.90/32"
			if !tc.bfd {
				s.BFD = nil
			}
			l.startSpeaker(b, routerConfig{Sessions: []bgp.Session{s}, Routes: map[string][]bgp.Route{s.Name: {{Prefix: prefix(route)}}}})
			var took, kernel, detected, down []time.Duration
			for range b.N * tc.trials {
				l.waitPeer(b, "ipv4Unicast", nodeV4.String(), "Established", 60*time.Second)
				l.waitRoute(b, route, true, 30*time.Second)
				// zebra installs the route after bgpd has it: a route not
				// yet in the kernel would count as gone from it at once.
				l.waitKernelRoute(b, route, 30*time.Second)
				if tc.bfd {
					l.waitBFDFast(b, 30*time.Second)
				}
				start := time.Now()
				l.cut(b)
				table, fib := l.waitGone(b, route, 30*time.Second)
				took = append(took, table.Sub(start))
				kernel = append(kernel, fib.Sub(start))
				down = append(down, l.neighborDownSince(b, start))
				if tc.bfd {
					detected = append(detected, l.bfdDownSince(b, start))
				}
				l.restore(b)
			}
			b.Logf("%s: route gone after %v", tc.name, took)
			b.Logf("%s: route gone from the router's kernel after %v", tc.name, kernel)
			b.Logf("%s: bgpd logged the neighbor down after %v", tc.name, down)
			if len(detected) > 0 {
				b.Logf("%s: bfdd declared down after %v", tc.name, detected)
			}
			slices.Sort(took)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[(len(took)*99)/100]), "p99-ms")
			b.ReportMetric(ms(took[len(took)-1]), "max-ms")
			b.ReportMetric(float64(len(took)), "trials")
			slices.Sort(kernel)
			b.ReportMetric(ms(kernel[len(kernel)/2]), "fib-p50-ms")
			b.ReportMetric(ms(kernel[len(kernel)-1]), "fib-max-ms")
			slices.Sort(down)
			b.ReportMetric(ms(down[len(down)/2]), "bgpd-down-p50-ms")
			b.ReportMetric(ms(down[len(down)-1]), "bgpd-down-max-ms")
			if len(detected) > 0 {
				slices.Sort(detected)
				b.ReportMetric(ms(detected[len(detected)/2]), "bfdd-p50-ms")
				b.ReportMetric(ms(detected[len(detected)-1]), "bfdd-max-ms")
			}
		})
	}
}

// bfdDownSince waits until bfdd has logged the node's session going
// from up to down after start, and returns when, relative to start. The
// log's times are in milliseconds (frr.Start sets that precision), so
// start is truncated to match.
func (l *lab) bfdDownSince(tb testing.TB, start time.Time) time.Duration {
	tb.Helper()
	var at time.Time
	waitFor(tb, fmt.Sprintf("bfdd logging %s down", nodeV4), 10*time.Second, func() error {
		for _, c := range l.frr.BFDStateChanges(tb) {
			if c.Peer == nodeV4.String() && c.From == "up" && c.To == "down" && !c.At.Before(start.Truncate(time.Millisecond)) {
				at = c.At
				return nil
			}
		}
		return fmt.Errorf("no such line in bfdd's log")
	})
	return at.Sub(start)
}

// neighborDownSince waits until bgpd has logged the node's neighbor down
// after start (the configuration turns on bgp log-neighbor-changes), and
// returns when, relative to start.
func (l *lab) neighborDownSince(tb testing.TB, start time.Time) time.Duration {
	tb.Helper()
	var at time.Time
	waitFor(tb, fmt.Sprintf("bgpd logging neighbor %s down", nodeV4), 10*time.Second, func() error {
		for _, c := range l.frr.BGPNeighborChanges(tb) {
			if c.Neighbor == nodeV4.String() && !c.Up && !c.At.Before(start.Truncate(time.Millisecond)) {
				at = c.At
				return nil
			}
		}
		return fmt.Errorf("no such line in bgpd's log")
	})
	return at.Sub(start)
}

// inKernel reports whether the router namespace's kernel routing table
// has route through a gateway, as zebra installs a BGP route.
func (l *lab) inKernel(tb testing.TB, route string) bool {
	tb.Helper()
	return strings.Contains(l.router.IP(tb, "route", "show", route), "via")
}

// waitKernelRoute waits until zebra has installed route in the kernel.
func (l *lab) waitKernelRoute(tb testing.TB, route string, limit time.Duration) {
	tb.Helper()
	waitFor(tb, route+" in the router's kernel", limit, func() error {
		if !l.inKernel(tb, route) {
			return fmt.Errorf("not there")
		}
		return nil
	})
}

// waitGone polls until route has left both bgpd's table and the router
// namespace's kernel routing table (zebra's install), and returns when
// each was first seen gone.
func (l *lab) waitGone(tb testing.TB, route string, limit time.Duration) (table, fib time.Time) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for table.IsZero() || fib.IsZero() {
		if fib.IsZero() && !l.inKernel(tb, route) {
			fib = time.Now()
		}
		if table.IsZero() && len(l.frr.BGPRoute(tb, route)) == 0 {
			table = time.Now()
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s still at the router after %v", route, limit)
		}
	}
	return table, fib
}

// sessionSetupTrials is how many sessions one iteration of
// BenchmarkSessionSetup sets up per case.
const sessionSetupTrials = 5

// BenchmarkSessionSetup times setting a session up: from the
// SetSessions call that creates it (its first Update follows at once)
// until bgpd holds its route, polled (vtysh, some milliseconds per
// poll). Each trial removes the session again and waits until bgpd has
// dropped the route. Cases: a directly connected router; a session bound
// to its uplink device (how a session in a VRF is set up: the same
// SO_BINDTODEVICE, on a kernel without VRF devices); eBGP multi-hop to a
// loopback two hops away. No BFD: the time is BGP's.
func BenchmarkSessionSetup(b *testing.B) {
	for _, tc := range []struct {
		name string
		lab  func(testing.TB) *lab
		s    bgp.Session
	}{
		{"direct", func(tb testing.TB) *lab { return newLab(tb, linkCutConfig(false)) }, bfdSession()},
		{"bound-to-device", func(tb testing.TB) *lab { return newLab(tb, linkCutConfig(false)) },
			func() bgp.Session { s := bfdSession(); s.VRF = "eth0"; return s }()},
		{"multihop", func(tb testing.TB) *lab { return newMultihopLab(tb, multihopConfig) }, multihopSession()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := tc.lab(b)
			sp := l.startSpeaker(b, routerConfig{})
			const route = "203.0.113.91/32"
			s := tc.s
			s.BFD = nil
			var took []time.Duration
			for range b.N * sessionSetupTrials {
				start := time.Now()
				sp.setSessions(b, s)
				sp.update(b, s.Name, []bgp.Route{{Prefix: prefix(route)}})
				for len(l.frr.BGPRoute(b, route)) == 0 {
					if time.Since(start) > time.Minute {
						b.Fatalf("%s not at bgpd a minute after the session was set", route)
					}
				}
				took = append(took, time.Since(start))
				sp.setSessions(b)
				l.waitRoute(b, route, false, 30*time.Second)
			}
			b.Logf("%s: session set to route at bgpd: %v", tc.name, took)
			slices.Sort(took)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[0]), "min-ms")
			b.ReportMetric(ms(took[len(took)-1]), "max-ms")
			b.ReportMetric(float64(len(took)), "trials")
		})
	}
}
