package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/test/testenv"
)

// call is one Announce call, in the order the journal received them.
type call struct {
	seq   int
	node  string
	addrs []netip.Addr
}

// journal is shared by the fake announcers of one lab: the ordered calls,
// what each node answers for right now, and every moment the handover
// rule was broken.
type journal struct {
	mu      sync.Mutex
	calls   []call
	current map[string]map[netip.Addr]bool
	// guarded are the addresses each node answers for whose object was
	// seen on the API server during one of its calls.
	guarded    map[string]map[netip.Addr]bool
	violations []string
}

func newJournal() *journal {
	return &journal{current: map[string]map[netip.Addr]bool{}, guarded: map[string]map[netip.Addr]bool{}}
}

// answerers are the nodes answering for a now, sorted.
func (j *journal) answerers(a netip.Addr) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for node, set := range j.current {
		if set[a] {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return out
}

// firstCall returns the index of the first call at or after from in which
// node answers for a (answering=true) or no longer does (false); -1 if
// none.
func (j *journal) firstCall(from int, node string, a netip.Addr, answering bool) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := from; i < len(j.calls); i++ {
		c := j.calls[i]
		if c.node == node && slices.Contains(c.addrs, a) == answering {
			return i
		}
	}
	return -1
}

// firstSilence returns the index of the first call at or after from in
// which node answers for nothing at all; -1 if none.
func (j *journal) firstSilence(from int, node string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := from; i < len(j.calls); i++ {
		if c := j.calls[i]; c.node == node && len(c.addrs) == 0 {
			return i
		}
	}
	return -1
}

func (j *journal) length() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.calls)
}

func (j *journal) problems() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.violations)
}

// fakeAnnouncer is one node's Announcer. Its host has the interfaces in
// present; an address with no list answers on the first of them.
type fakeAnnouncer struct {
	node    string
	journal *journal
	members *liveSet
	present []string
}

var _ speaker.Announcer = (*fakeAnnouncer)(nil)

func (f *fakeAnnouncer) Announce(ctx context.Context, want map[netip.Addr][]string) (map[netip.Addr][]string, []string) {
	j := f.journal
	j.mu.Lock()
	var started, stopped []netip.Addr
	for a := range want {
		if !j.current[f.node][a] {
			started = append(started, a)
		}
	}
	for a := range j.current[f.node] {
		if _, kept := want[a]; !kept {
			stopped = append(stopped, a)
		}
	}
	j.mu.Unlock()
	// The API server's word on the objects, read as the call begins.
	own, others, readErr := f.guards(ctx)

	j.mu.Lock()
	defer j.mu.Unlock()
	for _, a := range started {
		for node, set := range j.current {
			if node != f.node && set[a] {
				j.violations = append(j.violations, fmt.Sprintf("%s started answering %s while %s still answered it", f.node, a, node))
			}
		}
		if readErr != nil {
			continue // the shutdown call after the test: nothing to check
		}
		if len(others[a]) > 0 {
			j.violations = append(j.violations, fmt.Sprintf("%s started answering %s while live %v still held a ServiceL2Status for it", f.node, a, others[a]))
		}
	}
	// The objects follow the answering in the background, so a node may
	// answer before its object is written; once written, the object must
	// outlive the answering.
	if j.guarded[f.node] == nil {
		j.guarded[f.node] = map[netip.Addr]bool{}
	}
	for _, a := range stopped {
		if readErr == nil && j.guarded[f.node][a] && !own[a] {
			j.violations = append(j.violations, fmt.Sprintf("%s dropped its ServiceL2Status for %s before it stopped answering", f.node, a))
		}
		delete(j.guarded[f.node], a)
	}
	for a := range want {
		if own[a] {
			j.guarded[f.node][a] = true
		}
	}
	set := map[netip.Addr]bool{}
	var addrs []netip.Addr
	for a := range want {
		set[a] = true
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	j.current[f.node] = set
	j.calls = append(j.calls, call{seq: len(j.calls), node: f.node, addrs: addrs})

	answering := map[netip.Addr][]string{}
	var missing []string
	for a, names := range want {
		if len(names) == 0 {
			answering[a] = f.present[:1]
			continue
		}
		for _, n := range names {
			if slices.Contains(f.present, n) {
				answering[a] = append(answering[a], n)
			} else if !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
		}
	}
	return answering, missing
}

// guards reads every ServiceL2Status from the API server and returns the
// addresses this node's objects guard, and per address the other live
// nodes whose objects guard it. Objects that list no addresses are left
// out: the tests write none such for live nodes.
func (f *fakeAnnouncer) guards(ctx context.Context) (own map[netip.Addr]bool, others map[netip.Addr][]string, err error) {
	var list v1beta1.ServiceL2StatusList
	if err := testenv.Shared.Client.List(ctx, &list); err != nil {
		return nil, nil, err
	}
	own, others = map[netip.Addr]bool{}, map[netip.Addr][]string{}
	live := f.members.snapshot()
	for i := range list.Items {
		st := &list.Items[i]
		addrs, says := l2status.Addresses(st)
		if !says {
			continue
		}
		node := l2status.NodeOf(st)
		for _, a := range addrs {
			switch {
			case node == f.node:
				own[a] = true
			case slices.Contains(live, node):
				others[a] = append(others[a], node)
			}
		}
	}
	return own, others, nil
}

// liveSet is the membership of one lab: the test sets who is alive, and
// every speaker's view hears of it.
type liveSet struct {
	mu    sync.Mutex
	live  []string
	views []*memberView
}

func (l *liveSet) set(nodes ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live = slices.Sorted(slices.Values(nodes))
	for _, v := range l.views {
		select {
		case v.changed <- struct{}{}:
		default:
		}
	}
}

func (l *liveSet) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.live)
}

func (l *liveSet) view() *memberView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := &memberView{set: l, changed: make(chan struct{}, 1), dead: make(chan struct{}, 1)}
	l.views = append(l.views, v)
	return v
}

// memberView is one speaker's Membership.
type memberView struct {
	set     *liveSet
	changed chan struct{}
	dead    chan struct{}
	mu      sync.Mutex
	joined  []string
}

var _ speaker.Membership = (*memberView)(nil)

func (v *memberView) Join(addrs []string) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.joined = append(v.joined, addrs...)
	return len(addrs), nil
}

func (v *memberView) Live() []string           { return v.set.snapshot() }
func (v *memberView) Changed() <-chan struct{} { return v.changed }

// DeclaredDead is signalled by declareDead.
func (v *memberView) DeclaredDead() <-chan struct{} { return v.dead }

// declareDead tells the speaker another member declared it dead.
func (v *memberView) declareDead() { v.dead <- struct{}{} }

func (v *memberView) joinedAddrs() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.joined)
}
