package membership

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestRefutedDeathMovesNothing: node-a stops reading (its transport
// frozen, as a process starved of CPU reads nothing while its timers
// run) until its memberlist declares node-b dead, node-b's refutation
// waiting unread in node-a's socket. Once node-a reads again, memberlist
// takes node-b back, and node-a has neither told node-b it was declared
// dead nor dropped it from its live set. The test checks that the false
// declaration happened (memberlist reported node-b gone on node-a) and
// that node-a's check went out while the refutation waited. (The live
// set is watched from a goroutine, which may miss a short drop; the
// messages are counted where they are sent.)
func TestRefutedDeathMovesNothing(t *testing.T) {
	var told, refuted atomic.Int32
	a := newMember(t, "node-a", memberOpts{})
	b := newMember(t, "node-b", memberOpts{onDead: func() { told.Add(1) }, onSuspected: func() { refuted.Add(1) }})
	if _, err := b.Join([]string{a.addr}); err != nil {
		t.Fatalf("join: %v", err)
	}
	both := []string{"node-a", "node-b"}
	waitLive(t, a, both)
	waitLive(t, b, both)

	var dropped atomic.Bool
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-t.Context().Done():
				return
			case <-a.Changed():
				if !slices.Contains(a.Live(), "node-b") {
					dropped.Store(true)
				}
			}
		}
	}()

	// Every declared-dead message node-a sends, counted where it is sent.
	var sent atomic.Int32
	a.view.mu.Lock()
	tell := a.view.tell
	a.view.tell = func(member string, addr netip.AddrPort, token string) {
		sent.Add(1)
		tell(member, addr, token)
	}
	a.view.mu.Unlock()

	d := a.view.departures
	thaw := make(chan struct{})
	a.transport.frozen.Store(&thaw)
	waitFor(t, "node-a's memberlist to declare node-b dead", func() bool { return a.view.leaves.Load() > 0 })
	waitFor(t, "node-a to send its check behind whatever waits in its socket", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.sent > 0
	})
	// node-b refuted node-a's suspicion: its alive message is on its way
	// to node-a's socket or in it (memberlist applies it before the check
	// whichever came first).
	waitFor(t, "node-b to refute the suspicion", func() bool { return refuted.Load() > 0 })
	a.transport.frozen.Store(nil)
	close(thaw)

	waitFor(t, "node-a's memberlist to take node-b back", func() bool {
		return slices.ContainsFunc(a.ml.Members(), func(n *memberlist.Node) bool { return n.Name == "node-b" })
	})
	waitLive(t, a, both)
	if n := sent.Load(); n != 0 {
		t.Errorf("node-a sent node-b %d declared-dead messages", n)
	}
	if dropped.Load() {
		t.Error("node-a's live set dropped node-b")
	}
	if n := told.Load(); n != 0 {
		t.Errorf("node-b was told %d times that it had been declared dead", n)
	}
	if a.view.refuted.Load() == 0 {
		t.Error("node-a counted no refuted departure")
	}
}

// TestDepartureCheckComesBack: a member that really went is dropped once
// the check has come back through memberlist, with and without the
// cluster key, not when it timed out.
func TestDepartureCheckComesBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
	}{{"no key", nil}, {"key", keyA}} {
		t.Run(tc.name, func(t *testing.T) {
			ms := cluster(t, memberOpts{key: tc.key}, "node-a", "node-b")
			began := time.Now()
			if err := ms[1].Shutdown(); err != nil {
				t.Fatal(err)
			}
			waitLive(t, ms[0], []string{"node-a"})
			d := ms[0].view.departures
			d.mu.Lock()
			back := d.back
			d.mu.Unlock()
			if back == 0 {
				t.Errorf("node-b was dropped %v after it stopped without a check coming back", time.Since(began))
			}
		})
	}
}

// TestDeparturesConfirmedByLaterChecks: a check confirms the departures
// reported before it was numbered, not those reported after; a departure
// cancelled before its check comes back is never recorded; a message
// that is not this node's check, or names a check not sent yet, moves
// nothing.
func TestDeparturesConfirmedByLaterChecks(t *testing.T) {
	d, err := newDepartures("node-a", "127.0.0.1:7946")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *memberlist.Node { return &memberlist.Node{Name: name} }
	var recorded []string
	record := func(n *memberlist.Node) { recorded = append(recorded, n.Name) }
	back := func() uint64 {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.back
	}

	d.add(node("node-b"))
	d.add(node("node-c"))
	first := d.issue()
	d.add(node("node-d")) // after the first check was numbered
	for _, msg := range [][]byte{
		[]byte("steadylb/departure-check/1"),
		append(d.message(first)[:len(checkTag)], make([]byte, 24)...), // another nonce
		d.message(first + 1),                                          // not numbered yet
	} {
		if d.received(msg) && back() != 0 {
			t.Fatalf("%q counted as a check back", msg)
		}
	}
	if !d.received(d.message(first)) || back() != first {
		t.Fatalf("the check did not count as back: back %d, want %d", back(), first)
	}
	if !d.cancel("node-c") {
		t.Fatal("node-c was not pending")
	}
	d.confirm(back(), record)
	if !slices.Equal(recorded, []string{"node-b"}) {
		t.Fatalf("the first check recorded %v, want [node-b]", recorded)
	}
	second := d.issue()
	d.received(d.message(second))
	d.confirm(back(), record)
	if !slices.Equal(recorded, []string{"node-b", "node-d"}) {
		t.Fatalf("the second check recorded %v, want [node-b node-d]", recorded)
	}
}

// TestOwnLeaveIsRecordedAtOnce: memberlist reports this member's own
// Leave as a departure, which nothing can refute: it is recorded at once,
// not checked, so the last view after Leave no longer lists it. The
// member's reading is frozen, so a check could not come back before the
// shutdown.
func TestOwnLeaveIsRecordedAtOnce(t *testing.T) {
	a := newMember(t, "node-a", memberOpts{})
	thaw := make(chan struct{})
	a.transport.frozen.Store(&thaw)
	defer close(thaw)
	if err := a.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	if got := a.Live(); slices.Contains(got, "node-a") {
		t.Errorf("after Leave the view lists %v", got)
	}
	if n := a.view.leaves.Load(); n != 1 {
		t.Errorf("memberlist reported %d departures, want this member's own", n)
	}
}
