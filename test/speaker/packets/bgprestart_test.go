package packets

import (
	"slices"
	"testing"
	"time"

	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/lab"
)

// restartTrials is how many restarts one iteration of
// BenchmarkBGPRestart times.
const restartTrials = 5

// BenchmarkBGPRestart (make bench-bgp-restart): three speakers advertise
// one Service to FRR (no graceful restart, so FRR drops a path as soon as
// its session closes). Each trial kills one speaker with SIGKILL, waits
// until FRR has dropped its path, starts it again and times from the
// process start until FRR holds its path again, polling FRR's table
// (vtysh, some milliseconds per poll).
func BenchmarkBGPRestart(b *testing.B) {
	c, r, prefix := bgpCluster(b, false, func(*v1beta2.BGPPeerSpec) {})
	victim := c.lab.Nodes[0]
	var took []time.Duration
	for range b.N * restartTrials {
		c.speakers[victim.Name].Kill()
		c.waitFor(victim.Name+"'s path to go", func() bool { return !hasPathFrom(b, r, prefix, victim) })
		s := victim.Start(c.root, c.extra...)
		c.speakers[victim.Name] = s
		deadline := time.Now().Add(time.Minute)
		for !hasPathFrom(b, r, prefix, victim) {
			if time.Now().After(deadline) {
				b.Fatalf("%s's path not back a minute after its restart", victim.Name)
			}
		}
		took = append(took, time.Since(s.Started))
		c.waitReady(s)
	}
	b.Logf("restart to re-advertised: %v", took)
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[0]), "min-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	b.ReportMetric(float64(len(took)), "trials")
}

// hasPathFrom reports whether FRR holds a path for prefix with node as
// next hop.
func hasPathFrom(tb testing.TB, r *frr.Router, prefix string, node *lab.Node) bool {
	return slices.Contains(nextHops(tb, r, prefix), node.IPv4.String())
}
