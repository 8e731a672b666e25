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
	var told atomic.Int32
	a := newMember(t, "node-a", memberOpts{})
	b := newMember(t, "node-b", memberOpts{onDead: func() { told.Add(1) }})
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
