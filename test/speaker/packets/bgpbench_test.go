package packets

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/lab"
)

// bgpScaleCluster starts FRR in the client's namespace and the speakers
// on the lab's nodes, with sessions of family ("ipv4" or "ipv6") between
// every node and FRR and an advertisement of the benchmark's pool, and
// waits until all sessions are up. IPv6 has room for any number of
// Services (2001:db8:300::/64); the documentation ranges of IPv4 hold
// only 512 addresses (benchAddresses).
func bgpScaleCluster(b *testing.B, family string, extra ...string) (*cluster, *frr.Router) {
	b.Helper()
	c := prepareCluster(b, extra...)
	l := c.lab
	r := frr.Start(b, l.Client.NS, map[string]string{"zebra": "", "bgpd": routerConfig(l, family)})
	router, pool := lab.ClientIPv6, []string{"2001:db8:300::/64"}
	if family == "ipv4" {
		router, pool = lab.ClientIPv4, []string{"198.51.100.0/24", "203.0.113.0/24"}
	}
	c.create(&v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "frr", Namespace: l.Namespace()},
		Spec: v1beta2.BGPPeerSpec{MyASN: nodeAS, ASN: routerAS, Address: router.String()}})
	c.create(&v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "scale", Namespace: l.Namespace()},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: pool}})
	c.create(&v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "scale", Namespace: l.Namespace()},
		Spec: v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{"scale"}}})
	// The resident set counts the binary's mapped pages: start from the
	// disk, whichever binary it is (lab.EvictSpeaker).
	if err := l.EvictSpeaker(); err != nil {
		b.Fatal(err)
	}
	c.startAll()
	c.waitFor("every node's "+family+" session to be up at FRR", func() bool {
		return len(shortOf(b, r, l, family, 0)) == 0
	})
	return c, r
}

// shortOf are the lab nodes whose session of family is not established at
// FRR or from which FRR has received fewer than n prefixes.
func shortOf(tb testing.TB, r *frr.Router, l *lab.Lab, family string, n int) []string {
	sum := r.BGPSummary(tb)[family+"Unicast"]
	var out []string
	for _, node := range l.Nodes {
		p := sum[ipsOf(family, node)[0]]
		if p.State != "Established" || p.PfxRcd < n {
			out = append(out, node.Name)
		}
	}
	return out
}

// BenchmarkBGPScale (make bench-speaker-bgp): three speakers on the lab's
// nodes, each with an IPv6 session to FRR's bgpd, while n Services with
// ready endpoints on every node are written to the API server (a Service,
// its status and its EndpointSlice each, 16 writers at a time, as fast as
// this machine's API server takes them). Reported: how long the writes
// took, how long until FRR had received all n prefixes from every node
// (from the first write) and the ratio of the two, the speakers' CPU
// seconds over that time (the most any one of them used) and their peak
// RSS, with that speaker's resident set split into anon and file once
// converged. Then, with n Services announced, 20 more Services one at a
// time: the time from a Service's first write until FRR holds its prefix
// from all three nodes (p50, p99, max). With STEADYLB_PROFILE_DIR set,
// each speaker's heap profile once converged is saved there.
func BenchmarkBGPScale(b *testing.B) {
	frr.Require(b, "bgpd", "zebra")
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			for range b.N {
				benchBGPScale(b, "ipv6", n)
			}
		})
	}
}

// BenchmarkBGPScaleIPv4 is BenchmarkBGPScale over IPv4 sessions with 480
// Services (and the 20 single ones: the 500 of the 508 documentation
// addresses the lab leaves free). It exists to run the same measurement
// with MetalLB's speaker, whose native BGP carries IPv4 only:
//
//	STEADYLB_SPEAKER=$(hack/tools.sh metallb-speaker) STEADYLB_SPEAKER_IS_METALLB=1 go test ...
func BenchmarkBGPScaleIPv4(b *testing.B) {
	frr.Require(b, "bgpd", "zebra")
	b.Run("services=480", func(b *testing.B) {
		for range b.N {
			benchBGPScale(b, "ipv4", 480)
		}
	})
}

func benchBGPScale(b *testing.B, family string, n int) {
	dir, extra := profiling()
	c, r := bgpScaleCluster(b, family, extra...)
	addrs := benchAddresses(c.lab, family, n+bgpNewServiceTrials)
	before := c.usage()
	start := time.Now()
	c.services("scale", addrs[:n])
	wrote := time.Since(start)
	// Polled four times a second: each look runs vtysh, which would
	// otherwise take CPU from what is measured.
	c.waitWithin(fmt.Sprintf("FRR to receive %d prefixes from every node", n), 30*time.Minute, 250*time.Millisecond,
		func() bool { return len(shortOf(b, r, c.lab, family, n)) == 0 })
	converged := time.Since(start)
	after := c.usage()
	c.heapProfiles(dir, fmt.Sprintf("services-%d", n))

	var cpu time.Duration
	var peak lab.Usage
	for name, u := range after {
		cpu = max(cpu, u.CPU-before[name].CPU)
		if u.PeakRSS > peak.PeakRSS {
			peak = u
		}
	}
	b.ReportMetric(wrote.Seconds(), "write-s")
	b.ReportMetric(converged.Seconds(), "converge-s")
	b.ReportMetric(converged.Seconds()/wrote.Seconds(), "converge/write")
	b.ReportMetric(cpu.Seconds(), "speaker-cpu-s")
	b.ReportMetric(float64(peak.PeakRSS)/(1<<20), "speaker-peak-rss-MiB")
	// The split of that speaker's resident set once converged.
	b.ReportMetric(float64(peak.AnonRSS)/(1<<20), "speaker-anon-rss-MiB")
	b.ReportMetric(float64(peak.FileRSS)/(1<<20), "speaker-file-rss-MiB")

	all := ipsOf(family, c.lab.Nodes...)
	var took []time.Duration
	for i, addr := range addrs[n:] {
		prefix := netip.PrefixFrom(addr, addr.BitLen()).String()
		start := time.Now()
		c.services(fmt.Sprintf("new-%d", i), []netip.Addr{addr})
		c.waitFor(prefix+" from every node", func() bool { return slices.Equal(nextHops(b, r, prefix), all) })
		took = append(took, time.Since(start))
	}
	reportPercentiles(b, "new-service", took)
	b.ReportMetric(0, "ns/op")
}

// bgpNewServiceTrials is how many single Services the scale benchmark
// adds once the bulk is announced.
const bgpNewServiceTrials = 20
