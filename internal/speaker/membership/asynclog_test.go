package membership

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// blockingLog is a log output that, once blocked, takes no line until the
// test ends: a pipe nobody reads. It counts the lines offered to it.
type blockingLog struct {
	blocked atomic.Bool
	offered atomic.Int64
	release chan struct{}
	once    sync.Once
}

// newBlockingLog's output takes lines again when the test ends, or
// earlier at unblock; register it after what must stop before that.
func newBlockingLog(t *testing.T) *blockingLog {
	b := &blockingLog{release: make(chan struct{})}
	t.Cleanup(b.unblock)
	return b
}

func (b *blockingLog) unblock() { b.once.Do(func() { close(b.release) }) }

func (b *blockingLog) logger() logr.Logger {
	return funcr.New(func(_, _ string) {
		b.offered.Add(1)
		if b.blocked.Load() {
			<-b.release
		}
	}, funcr.Options{Verbosity: 1})
}

// TestLogOutputThatBlocksStallsNothing: a member whose log output takes no
// more lines still follows the cluster: it sees another member fail, then
// come back. Before, memberlist's lines and the view's (written under
// memberlist's state lock) waited for the output: the member saw the
// failure, then stopped at its line about it with the lock held, and
// never saw the return.
func TestLogOutputThatBlocksStallsNothing(t *testing.T) {
	out := newBlockingLog(t)
	a := newMember(t, "node-a", memberOpts{log: out.logger()})
	b, c := newMember(t, "node-b", memberOpts{}), newMember(t, "node-c", memberOpts{})
	for _, m := range []*testMember{b, c} {
		if _, err := m.Join([]string{a.addr}); err != nil {
			t.Fatalf("%s joins: %v", m.name, err)
		}
	}
	for _, m := range []*testMember{a, b, c} {
		waitLive(t, m, []string{"node-a", "node-b", "node-c"})
	}
	out.blocked.Store(true)
	before := out.offered.Load()
	if err := b.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	waitLive(t, a, []string{"node-a", "node-c"})
	back := newMember(t, "node-b", memberOpts{port: b.port})
	// Unblocked before the members shut down, so a member stuck writing a
	// line fails the test rather than hanging it.
	t.Cleanup(out.unblock)
	if _, err := back.Join([]string{c.addr}); err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	waitLive(t, a, []string{"node-a", "node-b", "node-c"})
	// The member had lines to write meanwhile (the output took the first).
	if out.offered.Load() == before {
		t.Fatal("node-a logged nothing about node-b: the test saw no blocked write")
	}
}

// TestDroppedLinesAreCounted: lines that find the queue full are dropped,
// and the next line written says how many.
func TestDroppedLinesAreCounted(t *testing.T) {
	out := newBlockingLog(t)
	var mu sync.Mutex
	var reports []string
	report := funcr.New(func(_, args string) { mu.Lock(); reports = append(reports, args); mu.Unlock() }, funcr.Options{})
	q := newAsyncLog(report)
	log := q.wrap(out.logger())
	out.blocked.Store(true)
	log.Info("first") // taken by the goroutine, which then blocks on it
	waitFor(t, "the first line at the output", func() bool { return out.offered.Load() == 1 })
	for range logQueueLen + 5 {
		log.Info("queued or dropped")
	}
	if got := q.dropped.Load(); got != 5 {
		t.Fatalf("dropped %d lines, want 5", got)
	}
	out.unblock()
	q.stop(waitTimeout)
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 1 || reports[0] != `"level"=0 "msg"="dropped membership log lines: the log output did not keep up" "dropped"=5` {
		t.Fatalf("reports %q, want one saying 5 were dropped", reports)
	}
	if got := out.offered.Load(); got != 1+logQueueLen {
		t.Errorf("the output got %d lines, want %d", got, 1+logQueueLen)
	}
}

// TestLateLineSaysWhenItWasLogged: a line that waited says when it was
// logged; one written at once does not.
func TestLateLineSaysWhenItWasLogged(t *testing.T) {
	at := time.Now().Add(-time.Second)
	kv := late(at, []any{"k", "v"})
	if len(kv) != 4 || kv[2] != "loggedAt" {
		t.Errorf("late line: %v", kv)
	}
	if kv := late(time.Now(), []any{"k", "v"}); len(kv) != 2 {
		t.Errorf("line on time: %v", kv)
	}
}
