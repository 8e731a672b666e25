package membership

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/memberlist"
)

var _ memberlist.EventDelegate = (*view)(nil)

// view is this node's picture of the membership, kept from memberlist's
// events. memberlist calls the Notify methods with its own state lock
// held, so they must not call back into memberlist or block: they copy
// what they need from the node (safe only during the call), update the
// map under the view's own lock and signal without waiting.
//
// memberlist tells joins, departures and updates apart, but not a failure
// from a graceful leave, nor a suspect member from an alive one; neither
// does the view.
type view struct {
	log     logr.Logger
	now     func() time.Time
	changed chan struct{} // buffered 1: one pending signal covers any number of changes

	joins, leaves, updates atomic.Uint64
	// refuted counts departures dropped because memberlist reported the
	// member alive again before they were confirmed (departures.go).
	refuted atomic.Uint64

	// departures, when set, holds each departure memberlist reports until
	// it is confirmed (departures.go); without it the view records it at
	// once.
	departures *departures
	// self is this member's name: its own departure (a Leave) is recorded
	// at once, as nothing can refute it.
	self string

	mu      sync.Mutex
	members map[string]entry
	// pruned is when gone members were last forgotten (prune).
	pruned time.Time
	// tell, once set, sends a member that was declared dead the news (see
	// fence.go). It only writes a packet, so the view calls it from
	// memberlist's callbacks, outside its own lock.
	tell func(member string, addr netip.AddrPort, token string)
	// joined, once set, is told of every member seen alive, outside the
	// view's lock (the fence re-judges a message that came before its
	// sender's join did).
	joined func(member string)
}

type entry struct {
	alive bool
	addr  netip.AddrPort
	since time.Time // of the last change
	meta  []byte    // the member's metadata (keys.go)
}

func newView(log logr.Logger, now func() time.Time) *view {
	return &view{log: log, now: now, changed: make(chan struct{}, 1), members: map[string]entry{}}
}

// NotifyJoin and NotifyLeave record first and log after: recording tells
// a member declared dead at once, and a log write can wait for seconds
// on a full log pipe (a node starved of CPU), while the member it would
// tell answers beside the node that took its addresses over.
func (v *view) NotifyJoin(n *memberlist.Node) {
	v.joins.Add(1)
	refuted := v.departures != nil && v.departures.cancel(n.Name)
	v.record(n, true)
	if refuted {
		v.refuted.Add(1)
		v.log.Info("memberlist declared a member dead and took it back before this node acted on it; nothing changes",
			"member", n.Name, "addr", n.Address())
		return
	}
	v.log.Info("member joined", "member", n.Name, "addr", n.Address())
}

func (v *view) NotifyLeave(n *memberlist.Node) {
	v.leaves.Add(1)
	if v.departures != nil && n.Name != v.self {
		v.departures.add(n)
		return
	}
	v.recordGone(n, false)
}

// recordGone records a departure; checked says that memberlist had
// handled every message received before it (departures.go).
func (v *view) recordGone(n *memberlist.Node, checked bool) {
	v.record(n, false)
	v.log.Info("member gone (left or failed)", "member", n.Name, "addr", n.Address(), "checked", checked)
}

func (v *view) NotifyUpdate(n *memberlist.Node) {
	v.updates.Add(1)
	v.log.V(1).Info("member updated", "member", n.Name, "addr", n.Address())
	v.record(n, true)
}

// record notes n's new state. A member that is gone is told it was
// declared dead as its departure is recorded, and again when it is back alive (fence.go says
// why), both times naming the life it was in when it went: the token of
// its metadata then, not the one it comes back with. memberlist does not tell a failure from a leave here, so a member
// that left is told too; it has stopped answering by then, and a
// speaker that answers nothing ignores the news.
func (v *view) record(n *memberlist.Node, alive bool) {
	var addr netip.AddrPort
	if ip, ok := netip.AddrFromSlice(n.Addr); ok {
		addr = netip.AddrPortFrom(ip.Unmap(), n.Port)
	}
	v.mu.Lock()
	now := v.now()
	before, known := v.members[n.Name]
	v.members[n.Name] = entry{alive: alive, addr: addr, since: now, meta: slices.Clone(n.Meta)}
	v.pruneLocked(now)
	tell, joined := v.tell, v.joined
	v.mu.Unlock()
	switch {
	case tell == nil:
	case !alive:
		tell(n.Name, addr, tokenOf(n.Meta))
	case known && !before.alive:
		tell(n.Name, addr, tokenOf(before.meta))
	}
	if joined != nil && alive {
		joined(n.Name)
	}
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// live returns the names of the alive members, sorted. O(n log n).
func (v *view) live() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	names := make([]string, 0, len(v.members))
	for name, e := range v.members {
		if e.alive {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// liveAddrs is the set of the alive members' addresses. O(n).
func (v *view) liveAddrs() map[netip.AddrPort]bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	addrs := make(map[netip.AddrPort]bool, len(v.members))
	for _, e := range v.members {
		if e.alive {
			addrs[e.addr] = true
		}
	}
	return addrs
}

// knownMetas returns the metadata of the members alive or gone within
// deadRetention. O(n).
func (v *view) knownMetas() [][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	metas := make([][]byte, 0, len(v.members))
	for _, e := range v.members {
		if e.alive || now.Sub(e.since) <= deadRetention {
			metas = append(metas, e.meta)
		}
	}
	return metas
}

// knownAddr returns the address of a member that is alive or went within
// deadRetention: one memberlist knows, as opposed to a stranger.
func (v *view) knownAddr(name string) (netip.AddrPort, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.members[name]
	if !ok || !e.alive && v.now().Sub(e.since) > deadRetention {
		return netip.AddrPort{}, false
	}
	return e.addr, true
}

// counts returns how many members are alive and how many left or failed
// within deadRetention. O(n).
func (v *view) counts() (alive, gone int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pruneLocked(v.now())
	for _, e := range v.members {
		if e.alive {
			alive++
		} else {
			gone++
		}
	}
	return alive, gone
}

// pruneEvery spaces out prune's scans, so that a burst of changes costs
// one scan, not one each: the view holds the live members plus those gone
// within deadRetention + pruneEvery.
const pruneEvery = deadRetention / 10

// pruneLocked forgets the members gone more than deadRetention ago, as
// memberlist does, at most once per pruneEvery. It runs on every change,
// so the view stays bounded whether or not anyone reads the metrics.
// O(n) per scan.
func (v *view) pruneLocked(now time.Time) {
	if now.Sub(v.pruned) < pruneEvery {
		return
	}
	v.pruned = now
	cutoff := now.Add(-deadRetention)
	for name, e := range v.members {
		if !e.alive && e.since.Before(cutoff) {
			delete(v.members, name)
		}
	}
}
