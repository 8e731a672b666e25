package layer2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	testclock "k8s.io/utils/clock/testing"
)

// fakeSince is a monotonic time the test moves.
type fakeSince struct{ now atomic.Int64 }

func (f *fakeSince) since() time.Duration    { return time.Duration(f.now.Load()) }
func (f *fakeSince) advance(d time.Duration) { f.now.Add(int64(d)) }

func TestGate(t *testing.T) {
	const limit = 300 * time.Millisecond
	var clk fakeSince
	answering := true
	var stalls []string
	g := newGate(limit, clk.since, func() bool { return answering }, func(gap time.Duration, long bool) {
		stalls = append(stalls, fmt.Sprintf("%v/%v", gap, long))
	})

	clk.advance(limit)
	if !g.open(2) {
		t.Fatal("closed after a pause of exactly the limit")
	}
	clk.advance(2 * time.Second)
	if g.open(2) || g.open(3) {
		t.Fatal("open after a 2 s stall")
	}
	for range 20 {
		clk.advance(limit / 5)
		if g.open(2) {
			t.Fatal("open again after a long stall without a reset")
		}
	}
	if want := []string{"2s/true"}; !slices.Equal(stalls, want) {
		t.Errorf("stalls reported %v, want %v", stalls, want)
	}
	g.reset()
	if !g.open(2) {
		t.Fatal("closed after reset")
	}

	// A short stall: closed until the process has run one more limit.
	clk.advance(limit + limit/2)
	if g.open(2) {
		t.Fatal("open after a stall of 1.5 limits")
	}
	for range 4 {
		clk.advance(limit / 5)
		if g.open(2) {
			t.Fatal("open again before the process ran one more limit")
		}
	}
	clk.advance(limit / 5)
	if !g.open(2) {
		t.Fatal("still closed once the process ran one more limit after a short stall")
	}
	if want := []string{"2s/true", "450ms/false"}; !slices.Equal(stalls, want) {
		t.Errorf("stalls reported %v, want %v", stalls, want)
	}

	// A long stall while nothing is answered: short, the speaker is not
	// told to start over.
	answering = false
	clk.advance(2 * time.Second)
	if g.open(2) {
		t.Error("a stall while nothing is answered left the gate open")
	}
	clk.advance(limit)
	if !g.open(2) {
		t.Error("a stall while nothing is answered closed the gate for more than one limit")
	}
	if want := []string{"2s/true", "450ms/false", "2s/false"}; !slices.Equal(stalls, want) {
		t.Errorf("stalls reported %v, want %v", stalls, want)
	}

	answering = true
	g.linkLost(3)
	if !g.open(2) || g.open(3) {
		t.Errorf("after the carrier of 3 went: open(2)=%v open(3)=%v, want true, false", g.open(2), g.open(3))
	}
	g.reset()
	if g.open(3) {
		t.Error("3 open after a reset while its carrier is still gone")
	}
	g.linkBack(3)
	if g.open(3) {
		t.Error("3 open once its carrier is back, before a reset")
	}
	g.reset()
	if !g.open(3) {
		t.Error("3 still closed after its carrier came back and a reset")
	}
	g.linkLost(4)
	answering = false
	g.linkBack(4)
	if !g.open(4) {
		t.Error("4 still closed after its carrier came back while nothing was answered")
	}
	answering = true

	off := newGate(-1, clk.since, func() bool { return true }, nil)
	clk.advance(time.Hour)
	if !off.open(2) {
		t.Error("a gate without a limit closed on a stall")
	}
}

// TestStallStopsEveryFrame: a responder whose process did not run for
// longer than the limit (a frozen node) answers none of the requests it
// finds when it runs again, reports the stall once, and answers again
// after the speaker starts over (an Announce of nothing, then the set).
func TestStallStopsEveryFrame(t *testing.T) {
	host := newFakeHost(eth0)
	var clk fakeSince
	var mu sync.Mutex
	var stalls []time.Duration
	reg := prometheus.NewRegistry()
	a := NewAnnouncer(testr.New(t), Options{Links: host.Links, Open: host.Open, Registerer: reg,
		Clock: testclock.NewFakeClock(time.Now()), StallLimit: time.Hour})
	// The test's time, before Start: the heartbeat then ticks against it.
	a.gate = newGate(DefaultStallLimit, clk.since, a.answersAnything, func(gap time.Duration, _ bool) {
		mu.Lock()
		defer mu.Unlock()
		stalls = append(stalls, gap)
	})
	h := startHarness(t, host, a, reg)
	addr := netip.MustParseAddr("198.51.100.1")
	h.announce(t, map[string][]string{addr.String(): nil})
	conn := host.conn("eth0", ARP)
	conn.deliver(t, ask(t, addr))
	eventually(t, "an answer", func() bool { return h.replies(t, "eth0", addr) == 1 })

	clk.advance(2 * time.Second)
	for range 3 {
		conn.deliver(t, ask(t, addr))
	}
	eventually(t, "the three requests read", func() bool {
		return counterValue(t, reg, "metallb_layer2_requests_received") == 4
	})
	// The reader counts a request before the answerer judges it: the
	// stall is reported once a frame (or the heartbeat) met the gate,
	// which stays shut from then on, so no later answer can follow.
	eventually(t, "the stall reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(stalls) > 0
	})
	if n := h.replies(t, "eth0", addr); n != 1 {
		t.Errorf("%d answers after the stall, want none (1 before)", n-1)
	}
	mu.Lock()
	if len(stalls) != 1 {
		t.Errorf("stalls reported: %v, want one", stalls)
	}
	mu.Unlock()

	h.announce(t, map[string][]string{})
	h.announce(t, map[string][]string{addr.String(): nil})
	conn = host.conn("eth0", ARP)
	conn.deliver(t, ask(t, addr))
	eventually(t, "an answer once started over", func() bool { return h.replies(t, "eth0", addr) == 2 })
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// TestFenceStopsEveryFrame: once fenced (the node was declared dead), a
// responder answers none of the requests it reads until the speaker
// starts over (an Announce of nothing), a fence while nothing is
// answered yet included.
func TestFenceStopsEveryFrame(t *testing.T) {
	host := newFakeHost(eth0)
	reg := prometheus.NewRegistry()
	a := NewAnnouncer(testr.New(t), Options{Links: host.Links, Open: host.Open, Registerer: reg,
		Clock: testclock.NewFakeClock(time.Now())})
	h := startHarness(t, host, a, reg)
	addr := netip.MustParseAddr("198.51.100.1")
	requests := func(n int) { t.Helper(); h.requests(t, addr, n) }

	// Before the first answer too: the speaker starts over, with an
	// Announce of nothing, in a round that may come after one that
	// announces.
	a.Fence()
	h.announce(t, map[string][]string{addr.String(): nil})
	requests(2)
	if n := h.replies(t, "eth0", addr); n != 0 {
		t.Errorf("%d answers fenced before the first, want none", n)
	}
	h.announce(t, map[string][]string{})
	h.announce(t, map[string][]string{addr.String(): nil})
	requests(1)
	eventually(t, "an answer", func() bool { return h.replies(t, "eth0", addr) == 1 })

	a.Fence()
	requests(3)
	if n := h.replies(t, "eth0", addr); n != 1 {
		t.Errorf("%d answers once fenced, want none (1 before)", n-1)
	}
	h.announce(t, map[string][]string{addr.String(): nil})
	requests(1)
	if n := h.replies(t, "eth0", addr); n != 1 {
		t.Errorf("%d answers after an Announce that is not a start over, want none", n-1)
	}

	h.announce(t, map[string][]string{})
	h.announce(t, map[string][]string{addr.String(): nil})
	requests(1)
	eventually(t, "an answer once started over", func() bool { return h.replies(t, "eth0", addr) == 2 })
}

// TestGateQuiet: a suspicion closes the gate for one limit of running
// time, then it opens by itself; a fence meanwhile keeps it closed until
// the reset.
func TestGateQuiet(t *testing.T) {
	const limit = 300 * time.Millisecond
	var clk fakeSince
	g := newGate(limit, clk.since, func() bool { return true }, func(time.Duration, bool) {
		t.Error("a suspicion reported as a stall")
	})
	for _, fence := range []bool{false, true} {
		g.quiet()
		for range 4 {
			if g.open(2) {
				t.Fatalf("open within the limit after a suspicion (fence %v)", fence)
			}
			clk.advance(limit / 5)
		}
		if fence {
			g.fence()
		}
		clk.advance(limit / 5)
		if got := g.open(2); got == fence {
			t.Fatalf("open = %v one limit after a suspicion, fenced %v", got, fence)
		}
	}
	g.reset()
	if !g.open(2) {
		t.Fatal("closed after the reset")
	}
}

// requests delivers n ARP requests for addr on eth0 and waits until the
// responder has read them.
func (h *harness) requests(t *testing.T, addr netip.Addr, n int) {
	t.Helper()
	conn := h.host.conn("eth0", ARP)
	before := counterValue(t, h.reg, "metallb_layer2_requests_received")
	for range n {
		conn.deliver(t, ask(t, addr))
	}
	eventually(t, "the requests read", func() bool {
		return counterValue(t, h.reg, "metallb_layer2_requests_received") == before+float64(n)
	})
}

// TestFramesWaitForTheMembership: no answer and no announcement goes out
// before the membership has read what reached it before the request (the
// announcement); one that does not catch up stops the frame, and a
// declaration read during the wait fences the gate before the frame.
func TestFramesWaitForTheMembership(t *testing.T) {
	host := newFakeHost(eth0)
	reg := prometheus.NewRegistry()
	a := NewAnnouncer(testr.New(t), Options{Links: host.Links, Open: host.Open, Registerer: reg,
		Clock: testclock.NewFakeClock(time.Now())})
	const (
		caughtUp = iota
		behind
		declaredMeanwhile
	)
	var mode, waits atomic.Int32
	a.FollowMembership(func(time.Duration) bool {
		defer waits.Add(1)
		switch mode.Load() {
		case behind:
			return false
		case declaredMeanwhile:
			a.Fence() // what reading the declaration does
		}
		return true
	})
	h := startHarness(t, host, a, reg)
	addr := netip.MustParseAddr("198.51.100.1")
	// waited waits for the n-th wait to end. The answerer waits once per
	// batch, in turn, so once a later request's wait has ended, the
	// earlier one's frames went out or never will.
	waited := func(what string, n int32) {
		t.Helper()
		eventually(t, what, func() bool { return waits.Load() >= n })
	}

	mode.Store(behind)
	h.announce(t, map[string][]string{addr.String(): nil})
	waited("the announcement's wait", 1)
	h.requests(t, addr, 1)
	waited("the first request's wait", 2)
	h.requests(t, addr, 1)
	waited("the second request's wait", 3)
	if n, r := h.replies(t, "eth0", addr), h.rounds(t, "eth0", addr); n != 0 || r != 0 {
		t.Errorf("%d answers and %d announcements while the membership is behind, want none", n, r)
	}

	mode.Store(caughtUp)
	h.requests(t, addr, 1)
	eventually(t, "an answer once caught up", func() bool { return h.replies(t, "eth0", addr) == 1 })

	mode.Store(declaredMeanwhile)
	before := waits.Load()
	h.requests(t, addr, 1)
	waited("the wait that reads the declaration", before+1)
	h.requests(t, addr, 1)
	waited("the next wait", before+2)
	if n := h.replies(t, "eth0", addr); n != 1 {
		t.Errorf("%d answers after a declaration read while waiting, want none (1 before)", n-1)
	}
}

// startHarness runs a until the test ends.
func startHarness(t *testing.T, host *fakeHost, a *Announcer, reg *prometheus.Registry) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &harness{host: host, a: a, reg: reg}
}

// TestCaughtUpWaitsUntilCurrent: a wait for the membership that took
// longer than currentWithin leaves time for a declaration to have come
// unread meanwhile, so the gate waits again from then; a membership that
// never catches up that quickly within the limit stops the frame.
func TestCaughtUpWaitsUntilCurrent(t *testing.T) {
	const limit = 300 * time.Millisecond
	for _, tt := range []struct {
		name  string
		waits []time.Duration // how long each wait takes, in turn
		want  bool
		calls int
	}{
		{"quick", []time.Duration{time.Millisecond}, true, 1},
		{"at the bound", []time.Duration{currentWithin}, true, 1},
		{"slow, then quick", []time.Duration{200 * time.Millisecond, time.Millisecond}, true, 2},
		{"slow until the limit", []time.Duration{120 * time.Millisecond, 120 * time.Millisecond, 120 * time.Millisecond}, false, 3},
		{"never", []time.Duration{time.Hour}, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var clk fakeSince
			g := newGate(limit, clk.since, func() bool { return true }, nil)
			calls := 0
			g.membership = func(timeout time.Duration) bool {
				d := tt.waits[calls]
				calls++
				if d > timeout {
					clk.advance(timeout)
					return false
				}
				clk.advance(d)
				return true
			}
			if got := g.caughtUp(); got != tt.want || calls != tt.calls {
				t.Errorf("caughtUp() = %v after %d waits, want %v after %d", got, calls, tt.want, tt.calls)
			}
		})
	}
}
