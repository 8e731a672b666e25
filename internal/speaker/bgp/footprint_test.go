package bgp_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	"github.com/go-logr/logr"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// BenchmarkSessionFootprint: the heap one configured session holds
// before its first route (its GoBGP server and tables), reported as
// heap-KiB/session. No session dials: nothing is advertised.
func BenchmarkSessionFootprint(b *testing.B) {
	const sessions = 8
	for range b.N {
		s, err := bgp.New(logr.Discard(), bgp.Options{NodeAddress: netip.MustParseAddr("198.51.100.2"),
			BFD: bfd.NewManager(logr.Discard(), bfd.Options{})})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Start(ctx) }()
		before := heapInUse()
		var configured []bgp.Session
		for i := range sessions {
			configured = append(configured, session(fmt.Sprintf("s%d", i)))
		}
		if err := s.SetSessions(ctx, configured); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heapInUse()-before)/sessions/1024, "heap-KiB/session")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
