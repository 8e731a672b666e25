package bgp_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// TestStartLeavesNoGoroutine: every goroutine the Sessions start (the
// retry loop, each session's GoBGP server, its watcher and what it
// spawns) has ended by the time Start returns.
func TestStartLeavesNoGoroutine(t *testing.T) {
	before := goroutines()
	s := newSessions(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	if err := s.SetSessions(ctx, []bgp.Session{session("a"), session("b")}); err != nil {
		t.Fatal(err)
	}
	// The first Update adds the neighbor: GoBGP starts dialling.
	if err := s.Update(ctx, "a", []bgp.Route{{Prefix: netip.MustParsePrefix("203.0.113.1/32")}}, nil); err != nil {
		t.Fatal(err)
	}
	started := 0
	for id, stack := range goroutines() {
		if _, old := before[id]; !old && ours(stack) {
			started++
		}
	}
	if started == 0 {
		t.Fatal("no goroutine of the Sessions or GoBGP running: nothing to check")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for id, stack := range goroutines() {
			if _, old := before[id]; !old && ours(stack) {
				left = append(left, stack)
			}
		}
		if len(left) == 0 {
			t.Logf("%d goroutines ran, none is left", started)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d goroutines still running 10 s after Start returned:\n%s", len(left), started, strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ours reports a goroutine running code of this package or of GoBGP.
func ours(stack string) bool {
	return strings.Contains(stack, "internal/speaker/bgp.") || strings.Contains(stack, "github.com/osrg/gobgp")
}

// goroutines are the stacks of every goroutine, by their header's id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		var id int
		if _, err := fmt.Sscanf(g, "goroutine %d ", &id); err == nil {
			out[fmt.Sprint(id)] = g
		}
	}
	return out
}
