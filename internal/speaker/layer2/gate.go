package layer2

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStallLimit is how long this process may go without running
// before the Announcer stops answering, unless Options says otherwise.
// The other speakers need at least about 300 ms to declare a silent
// member dead (a probe that fails by the end of its 100 ms interval, then
// a 200 ms suspicion; see internal/speaker/membership), so a process that
// did not run for less than this cannot have been replaced meanwhile.
const DefaultStallLimit = 300 * time.Millisecond

// gate decides whether the responders may send anything at all. These
// things close it, before a single frame goes out:
//
//   - a stall: the process did not run for longer than the limit (frozen
//     by SIGSTOP, a VM paused, starved of CPU). The others may have
//     declared this node dead and taken its addresses over meanwhile,
//     and its responders would otherwise answer the requests queued in
//     their sockets, and announce, the moment it runs again, before the
//     speaker hears that it was declared dead. The gate is closed for
//     every interface. After a stall of twice the limit or more the node
//     was declared dead by every measure the membership uses in a small
//     cluster, so Stalled is called and the speaker starts over. After a
//     shorter one it may or may not have been: the others tell it at once
//     when they declare it dead, and that message, already in its socket
//     when it runs again, reaches the speaker within milliseconds, so the
//     gate stays closed until the process has run for one more limit
//     without a stall, and opens again by itself unless the speaker
//     started over meanwhile. A false alarm under CPU starvation then
//     costs a fraction of a second of silence, not a start grace.
//   - a suspicion: another speaker missed this node's acks and suspects
//     it, and will declare it dead unless the refutation gets there
//     within the suspicion time (Quiet). The gate closes as after a short
//     stall, for one limit of running time: if the node is declared dead
//     meanwhile, the message arrives and fences it before it could answer
//     beside its replacement; if not, it answers again by itself.
//   - a declaration: the others declared this node dead and answer in its
//     place already (Fence). The speaker starts over, but only once its
//     round loop gets to it, which on a busy node takes seconds; the gate
//     closes for every interface the moment the news arrives, until that
//     start over.
//   - a membership behind (Announcer.FollowMembership): the declaration is
//     a packet on the membership's socket, and a node whose reading of
//     that socket is starved while its responders run (no stall: the
//     process runs) would answer beside its replacement until it reads
//     it. So a frame goes out only once the membership has read, in a
//     wait of at most currentWithin, every packet that reached it before
//     the wait began: the others send the declaration before they answer
//     in this node's place, so when they answer it has fenced the gate.
//     A membership that does not catch up within the limit stops the
//     frame.
//   - the carrier of an interface going while it answers (a cut link):
//     the node is cut off and will be declared dead; when the link comes
//     back the speaker starts over (CarrierReturned), but the kernel may
//     report the return later than the first frames get through. The
//     gate is closed for that interface only.
//
// An Announce of nothing (what the speaker does when it starts over)
// opens it again, except for an interface whose carrier has not come back
// yet: an Announce of nothing may also just be a round in which this node
// owns nothing, and the start over follows the return.
type gate struct {
	limit time.Duration // <= 0: no stall detection
	since func() time.Duration
	// beat is since() at the last beat or check that saw no stall.
	beat    atomic.Int64
	stalled atomic.Bool
	// fenced: closed by a declaration until the next reset.
	fenced atomic.Bool
	// trippedAt is since() at the last stall seen while closed; long: a
	// stall of twice the limit or more, which only a reset ends.
	trippedAt atomic.Int64
	long      atomic.Bool
	// answering reports whether anything is answered: only a long stall
	// while answering makes the speaker start over.
	answering func() bool
	// onStall is called for each stall that closes the gate, with how
	// long it lasted and whether it was long.
	onStall func(gap time.Duration, long bool)
	// membership reports whether the membership read, within timeout,
	// every packet that reached it before the call; nil: no membership to
	// wait for. Set before the responders run.
	membership func(timeout time.Duration) bool
	// behind is whether the last wait for the membership timed out;
	// onBehind is told each time that changes.
	behind   atomic.Bool
	onBehind func(behind bool)

	mu sync.Mutex
	// down are the interfaces whose carrier went while answering: false
	// until the carrier is back, true after.
	down map[int]bool
	// downSnap is down, copied on every change, read without the lock.
	downSnap atomic.Pointer[map[int]bool]
}

func newGate(limit time.Duration, since func() time.Duration, answering func() bool, onStall func(time.Duration, bool)) *gate {
	g := &gate{limit: limit, since: since, answering: answering, onStall: onStall, down: map[int]bool{}}
	g.beat.Store(int64(since()))
	return g
}

// tick records that the process runs; called every limit/5 by the
// Announcer's heartbeat goroutine.
func (g *gate) tick() { g.check() }

// check reports whether the process has run without a stall since the
// last beat, closing the gate if not, and records a beat.
func (g *gate) check() bool {
	if g.limit <= 0 {
		return true
	}
	now := g.since()
	last := time.Duration(g.beat.Load())
	if gap := now - last; gap > g.limit {
		g.trip(now, gap)
	}
	// Later than last only: checks race with ticks.
	for {
		cur := g.beat.Load()
		if int64(now) <= cur || g.beat.CompareAndSwap(cur, int64(now)) {
			break
		}
	}
	if g.stalled.Load() && !g.long.Load() && now-time.Duration(g.trippedAt.Load()) >= g.limit {
		g.stalled.Store(false)
	}
	return !g.stalled.Load()
}

// trip closes the gate after a stall of gap, ending at now. A long stall
// while answering needs the speaker to start over; any other is a short
// one, even a long stall while nothing was answered: the speaker may have
// decided, before it stalled, to start answering once its grace is over,
// which the stall may have let pass, so its first frames wait too.
func (g *gate) trip(now, gap time.Duration) {
	g.closeAt(now)
	if gap >= 2*g.limit && g.answering() {
		if g.long.CompareAndSwap(false, true) && g.onStall != nil {
			g.onStall(gap, true)
		}
		return
	}
	if g.onStall != nil {
		g.onStall(gap, false)
	}
}

// open reports whether a frame may go out on the interface with this
// index.
func (g *gate) open(index int) bool {
	if !g.check() || g.fenced.Load() {
		return false
	}
	down := g.downSnap.Load()
	return down == nil || !(*down)[index]
}

// currentWithin is how far behind the membership may be when a frame
// goes out. A wait for it proves that it read what came before the wait
// began; one that took longer leaves that long for a declaration to have
// come unread, so the gate waits again, from then, until a wait is this
// quick. A replacement starts answering well after it sends the
// declaration (its round first: 100 to 400 ms in the lab's logs), so a
// frame that goes out within this of a caught-up membership does not
// follow the replacement's first.
const currentWithin = 50 * time.Millisecond

// caughtUp waits until the membership has read everything that reached it
// before the wait began, in a wait no longer than currentWithin, for at
// most one limit in all (DefaultStallLimit when the stall check is off).
// A frame may go out only after it reports true, and then only if open
// still does: the wait is what lets a declaration read meanwhile fence
// the gate first.
func (g *gate) caughtUp() bool {
	if g.membership == nil {
		return true
	}
	timeout := g.limit
	if timeout <= 0 {
		timeout = DefaultStallLimit
	}
	deadline := g.since() + timeout
	ok := false
	for !ok {
		began := g.since()
		if began >= deadline || !g.membership(deadline-began) {
			break
		}
		ok = g.since()-began <= currentWithin
	}
	if g.behind.Swap(!ok) != !ok && g.onBehind != nil {
		g.onBehind(!ok)
	}
	return ok
}

// quiet closes the gate for every interface for one limit of running
// time, as a short stall does.
func (g *gate) quiet() {
	if g.limit > 0 {
		g.closeAt(g.since())
	}
}

// closeAt closes the gate at now: check opens it one limit later, unless
// the stall was long.
func (g *gate) closeAt(now time.Duration) {
	g.trippedAt.Store(int64(now))
	g.stalled.Store(true)
}

// fence closes the gate for every interface until the next reset.
func (g *gate) fence() { g.fenced.Store(true) }

// linkLost closes the gate for the interface with this index.
func (g *gate) linkLost(index int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down[index] = false
	g.publish()
}

// linkBack notes that the carrier of a closed interface is back: the
// next reset opens it, or at once if nothing is answered now.
func (g *gate) linkBack(index int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.down[index]; !ok {
		return
	}
	if !g.answering() {
		delete(g.down, index)
		g.publish()
		return
	}
	g.down[index] = true
}

// publish copies down for open. Called with mu held.
func (g *gate) publish() {
	if len(g.down) == 0 {
		g.downSnap.Store(nil)
		return
	}
	snap := make(map[int]bool, len(g.down))
	for i := range g.down {
		snap[i] = true
	}
	g.downSnap.Store(&snap)
}

// rebase counts the process's running time from now: nothing before it
// is a stall. Frames and the heartbeat only check the gate once the
// Announcer runs, so nothing else needs resetting then.
func (g *gate) rebase() { g.beat.Store(int64(g.since())) }

// reset opens the gate again: after a stall, and for every interface
// whose carrier is back.
func (g *gate) reset() {
	g.mu.Lock()
	for i, back := range g.down {
		if back {
			delete(g.down, i)
		}
	}
	g.publish()
	g.mu.Unlock()
	g.beat.Store(int64(g.since()))
	g.long.Store(false)
	g.stalled.Store(false)
	g.fenced.Store(false)
}
