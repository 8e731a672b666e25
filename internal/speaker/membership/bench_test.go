package membership

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkFailureDetection measures, with the default tuning, the time
// from a member's Shutdown (no Leave: as SIGKILL, its sockets close and it
// never answers again) until both other members of a three-node cluster
// have dropped it from Live(). Each iteration starts a fresh victim, so
// the probe schedule's phase is random as in a real failure. Run it with a
// fixed count, e.g. -bench FailureDetection -benchtime=10x; it reports the
// median and the maximum over the iterations.
func BenchmarkFailureDetection(b *testing.B) {
	observers := cluster(b, memberOpts{}, "observer-a", "observer-b")
	var detections []time.Duration
	for i := 0; b.Loop(); i++ {
		victim := newMember(b, fmt.Sprintf("victim-%03d", i), memberOpts{})
		if _, err := victim.Join([]string{observers[0].addr}); err != nil {
			b.Fatalf("victim joins: %v", err)
		}
		all := []string{"observer-a", "observer-b", victim.name}
		for _, m := range append(slices.Clone(observers), victim) {
			waitLive(b, m, all)
		}

		start := time.Now()
		if err := victim.Shutdown(); err != nil {
			b.Fatal(err)
		}
		detections = append(detections, waitAllDrop(b, observers, victim.name, start))
	}
	if len(detections) == 0 {
		b.Fatal("no failure was measured")
	}
	slices.Sort(detections)
	b.ReportMetric(float64(detections[len(detections)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(detections[len(detections)-1].Milliseconds()), "max-ms")
	b.ReportMetric(0, "ns/op") // the wall time per iteration is mostly set-up
}

// waitAllDrop waits until every observer has dropped name from Live() and
// returns the time since start of the last one to do so.
func waitAllDrop(b *testing.B, observers []*testMember, name string, start time.Time) time.Duration {
	b.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
		failed  []error
	)
	for _, o := range observers {
		wg.Go(func() {
			err := awaitGone(o.Members, name, waitTimeout)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", o.name, err))
			}
			slowest = max(slowest, took)
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("failure not detected: %v", failed)
	}
	return slowest
}

// awaitGone waits for a Changed signal after which Live() lacks name.
func awaitGone(m *Members, name string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for slices.Contains(m.Live(), name) {
		select {
		case <-m.Changed():
		case <-deadline:
			return fmt.Errorf("%s still live after %v", name, timeout)
		}
	}
	return nil
}

// BenchmarkSteadyStateTraffic measures what an idle member sends: probes,
// acks and any gossip, per second, in a five-member encrypted cluster
// with node names of a realistic length (27 characters), over one second
// per iteration. Run it with -benchtime=5x. The TCP push/pull (every 30s
// at this size) is not in it; doc.go adds it for 1,000 nodes.
func BenchmarkSteadyStateTraffic(b *testing.B) {
	names := make([]string, 5)
	for i := range names {
		names[i] = fmt.Sprintf("worker-%04d.cluster.example", i+1)
	}
	ms := cluster(b, memberOpts{key: make([]byte, 32)}, names...)
	// Let the join's gossip die down before counting.
	time.Sleep(2 * time.Second)
	var packets, bytes uint64
	start := time.Now()
	before := sentCounts(ms)
	for b.Loop() {
		time.Sleep(time.Second)
	}
	after := sentCounts(ms)
	elapsed := time.Since(start).Seconds()
	for i := range ms {
		packets += after[i][0] - before[i][0]
		bytes += after[i][1] - before[i][1]
	}
	if packets == 0 {
		b.Fatal("no packets sent by five live members")
	}
	perNode := float64(len(ms)) * elapsed
	b.ReportMetric(float64(packets)/perNode, "packets/s/node")
	b.ReportMetric(float64(bytes)/perNode, "bytes/s/node")
	b.ReportMetric(float64(bytes)/float64(packets), "bytes/packet")
	b.ReportMetric(0, "ns/op")
}

func sentCounts(ms []*testMember) [][2]uint64 {
	counts := make([][2]uint64, len(ms))
	for i, m := range ms {
		counts[i] = [2]uint64{m.transport.sent.Load(), m.transport.sentBytes.Load()}
	}
	return counts
}
