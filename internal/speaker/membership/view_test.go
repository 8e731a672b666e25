package membership

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/hashicorp/memberlist"
)

// TestViewStaysBoundedWithoutScrapes churns 1,000 members through joins
// and leaves with no one reading the metrics: the view forgets the gone
// ones by itself and holds only those gone within deadRetention (plus one
// prune interval), however long the churn goes on.
func TestViewStaysBoundedWithoutScrapes(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	v := newView(logr.Discard(), func() time.Time { return clock })
	const churn, step = 1000, 100 * time.Millisecond
	most := 0
	for i := range churn {
		n := &memberlist.Node{Name: "node-" + itoa(i), Addr: net.IPv4(198, 51, 100, byte(i%250+1)), Port: 7946}
		v.NotifyJoin(n)
		clock = clock.Add(step)
		v.NotifyLeave(n)
		clock = clock.Add(step)
		v.mu.Lock()
		most = max(most, len(v.members))
		v.mu.Unlock()
	}
	// One member goes every 2 steps; those gone within the retention and
	// one prune interval stay, and the one that joined last.
	bound := int((deadRetention+pruneEvery)/(2*step)) + 2
	if most > bound {
		t.Errorf("the view held up to %d members during %d joins and leaves, want at most %d", most, churn, bound)
	}
	if most < bound/2 {
		t.Errorf("the view held at most %d members: the churn did not fill it, the test proves nothing", most)
	}
}

// TestViewTellsAtOnce: a member that goes is told while memberlist's
// callback runs, from the caller's goroutine: nothing is left running.
// Both times it is told about the life it went in, even when it comes
// back with a new token (it acted on the first message, or restarted).
func TestViewTellsAtOnce(t *testing.T) {
	v := newView(logr.Discard(), time.Now)
	var told []string
	v.tell = func(member string, addr netip.AddrPort, token string) {
		told = append(told, member+" "+addr.String()+" "+token)
	}
	first, next := "0123456789abcdef", "fedcba9876543210"
	n := &memberlist.Node{Name: "node-a", Addr: net.IPv4(198, 51, 100, 1), Port: 7946, Meta: tokenMeta(first)}
	v.NotifyJoin(n)
	if len(told) != 0 {
		t.Fatalf("told %v on a join", told)
	}
	v.NotifyLeave(n)
	back := *n
	back.Meta = tokenMeta(next)
	v.NotifyJoin(&back) // back alive: told once more
	v.NotifyUpdate(&back)
	want := []string{"node-a 198.51.100.1:7946 " + first, "node-a 198.51.100.1:7946 " + first}
	if !slices.Equal(told, want) {
		t.Errorf("told %v by the time the callbacks returned, want %v", told, want)
	}
}

// TestViewTellsBeforeItLogs: a member declared dead is told while the
// view's log line is still stuck in a full log pipe, not after.
func TestViewTellsBeforeItLogs(t *testing.T) {
	release := make(chan struct{})
	log := funcr.New(func(_, _ string) { <-release }, funcr.Options{})
	v := newView(log, time.Now)
	told := make(chan string, 1)
	v.tell = func(member string, _ netip.AddrPort, _ string) { told <- member }
	n := &memberlist.Node{Name: "node-a", Addr: net.IPv4(198, 51, 100, 1), Port: 7946}
	v.members["node-a"] = entry{alive: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.NotifyLeave(n)
	}()
	select {
	case got := <-told:
		if got != "node-a" {
			t.Errorf("told %q", got)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the member was not told while the log line waited")
	}
	close(release)
	<-done
}
