package cluster_test

import (
	"testing"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/load"
)

// policies are the two externalTrafficPolicy settings every layer-2
// scenario runs under.
var policies = []struct {
	name string
	opts []cluster.ServiceOption
}{{"Cluster", nil}, {"Local", []cluster.ServiceOption{cluster.Local}}}

// TestL2RollingUpgrade: every speaker restarted with SIGTERM one node
// after the other, then both controller replicas, while requests flow
// through the Service's address: no request finds no way (no timeout, no
// refusal). What a layer-2 move costs is allowed, and only that: when the
// address moves to another node (the announcing speaker stops, and comes
// back), a connection in flight at that instant reaches a node that has
// no state for it and is reset; the address moves at most twice per
// restarted speaker.
func TestL2RollingUpgrade(t *testing.T) {
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			r := startL2(t, p.opts...)
			rollingUpgrade(t, r)
			rep := r.finish(t)
			resets := rep.Errors[load.ErrReset]
			if rep.Failed != resets || resets > 2*len(r.c.Lab.Nodes) {
				t.Errorf("%d of %d requests failed during the rolling upgrade: %v; want none but at most %d resets of connections in flight while the address moved",
					rep.Failed, rep.Sent, rep.Errors, 2*len(r.c.Lab.Nodes))
			}
			if r.moves == 0 {
				t.Error("the traffic never moved to another node: the scenario proved nothing")
			}
		})
	}
}

// BenchmarkL2: failed requests and the longest time without an answer
// while the announcing node's speaker is killed (and started again), its
// link is cut (and restored), it is frozen for 2 s, and during a rolling
// upgrade, under both traffic policies, at 300 requests per second.
func BenchmarkL2(b *testing.B) {
	scenarios := append(l2Disruptions[:len(l2Disruptions):len(l2Disruptions)], l2Disruption{"RollingUpgrade", rollingUpgrade})
	for _, p := range policies {
		for _, sc := range scenarios {
			b.Run(p.name+"/"+sc.name, func(b *testing.B) {
				for b.Loop() {
					r := startL2(b, p.opts...)
					sc.do(b, r)
					rep := r.finish(b)
					b.ReportMetric(float64(rep.Failed), "failed")
					b.ReportMetric(float64(rep.Sent), "requests")
					b.ReportMetric(float64(rep.LongestGap.Milliseconds()), "gap-ms")
					b.ReportMetric(float64(rep.LongestStall.Milliseconds()), "loadgen-stall-ms")
				}
			})
		}
	}
}
