package routes

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// Key names one route: a prefix on a session.
type Key struct {
	Session string
	Prefix  netip.Prefix
}

// Attrs are the path attributes one advertisement gives its routes on one
// kind of session. The Table tells contributions apart by pointer, so a
// caller makes one Attrs per advertisement and session kind for each
// configuration and shares it among the entries.
type Attrs struct {
	// LocalPref, when not zero, is sent (iBGP sessions only).
	LocalPref        uint32
	Communities      []uint32
	LargeCommunities []config.LargeCommunity
}

// Entry is one contribution of a source: route Key with Attrs.
type Entry struct {
	Key   Key
	Attrs *Attrs
}

// Change is what one session must be sent: routes to advertise (new, or
// with new attributes) and prefixes to withdraw, each sorted by prefix.
type Change struct {
	Session   string
	Advertise []bgp.Route
	Withdraw  []netip.Prefix
}

// Table is the reference-counted set of routes. It is not safe for
// concurrent use: the speaker's loop owns it.
type Table struct {
	bySource map[types.NamespacedName][]Entry
	// refs counts, per route, the contributions by their attributes.
	refs map[Key]map[*Attrs]int
	// sent is what each session was last sent successfully.
	sent map[string]map[netip.Prefix]bgp.Route
	// pending are the routes that may differ from what their session was
	// sent. A Go map keeps the room it grew to, and walking it costs that
	// room, not its length, so after a burst (the first load of every
	// Service) it is copied into a small one: peak is its largest length
	// since.
	pending map[Key]struct{}
	peak    int
}

// New returns an empty Table.
func New() *Table {
	return &Table{
		bySource: map[types.NamespacedName][]Entry{},
		refs:     map[Key]map[*Attrs]int{},
		sent:     map[string]map[netip.Prefix]bgp.Route{},
		pending:  map[Key]struct{}{},
	}
}

// Set replaces a source's entries (none: forget the source). O(old +
// new entries), whatever the size of the table.
func (t *Table) Set(src types.NamespacedName, entries []Entry) {
	for _, e := range t.bySource[src] {
		t.release(e)
	}
	if len(entries) == 0 {
		delete(t.bySource, src)
		return
	}
	t.bySource[src] = slices.Clone(entries)
	for _, e := range entries {
		refs := t.refs[e.Key]
		if refs == nil {
			refs = map[*Attrs]int{}
			t.refs[e.Key] = refs
		}
		refs[e.Attrs]++
		t.markPending(e.Key)
	}
}

func (t *Table) markPending(k Key) {
	t.pending[k] = struct{}{}
	t.peak = max(t.peak, len(t.pending))
}

// shrinkPending replaces pending by a fresh copy once it holds less than
// an eighth of its peak, so a walk over it costs what it holds: O(length)
// amortized over the deletions that emptied it.
func (t *Table) shrinkPending() {
	if len(t.pending)*8 >= t.peak {
		return
	}
	fresh := make(map[Key]struct{}, len(t.pending))
	for k := range t.pending {
		fresh[k] = struct{}{}
	}
	t.pending, t.peak = fresh, len(fresh)
}

func (t *Table) release(e Entry) {
	refs := t.refs[e.Key]
	refs[e.Attrs]--
	if refs[e.Attrs] <= 0 {
		delete(refs, e.Attrs)
	}
	if len(refs) == 0 {
		delete(t.refs, e.Key)
	}
	t.markPending(e.Key)
}

// Sources are every source with entries, in no order.
func (t *Table) Sources() []types.NamespacedName {
	return slices.Collect(maps.Keys(t.bySource))
}

// want is the route wanted for a key, merged from its contributions; ok is
// false when nothing contributes to it.
func (t *Table) want(k Key) (r bgp.Route, ok bool) {
	refs := t.refs[k]
	if len(refs) == 0 {
		return bgp.Route{}, false
	}
	r.Prefix = k.Prefix
	for a := range refs {
		// Configuration refuses two localPrefs for one route; where it
		// cannot tell (serviceSelectors), the highest wins, so the
		// choice does not depend on map order.
		r.LocalPref = max(r.LocalPref, a.LocalPref)
		r.Communities = append(r.Communities, a.Communities...)
		r.LargeCommunities = append(r.LargeCommunities, a.LargeCommunities...)
	}
	slices.Sort(r.Communities)
	r.Communities = slices.Compact(r.Communities)
	slices.SortFunc(r.LargeCommunities, compareLarge)
	r.LargeCommunities = slices.Compact(r.LargeCommunities)
	if len(r.Communities) == 0 {
		r.Communities = nil
	}
	if len(r.LargeCommunities) == 0 {
		r.LargeCommunities = nil
	}
	return r, true
}

// Changes are the sends that bring every session among sessions in line,
// sorted by session. Pending routes of other sessions stay pending. Cost:
// the number of pending routes.
func (t *Table) Changes(sessions []string) []Change {
	by := map[string]*Change{}
	for k := range t.pending {
		want, wanted := t.want(k)
		had, sent := t.sent[k.Session][k.Prefix]
		if !slices.Contains(sessions, k.Session) {
			if !wanted && !sent {
				delete(t.pending, k) // a session gone, and nothing left to send it
			}
			continue
		}
		c := by[k.Session]
		if c == nil {
			c = &Change{Session: k.Session}
			by[k.Session] = c
		}
		switch {
		case wanted && (!sent || !sameRoute(want, had)):
			c.Advertise = append(c.Advertise, want)
		case !wanted && sent:
			c.Withdraw = append(c.Withdraw, k.Prefix)
		}
	}
	var out []Change
	for _, c := range by {
		if len(c.Advertise)+len(c.Withdraw) == 0 {
			continue
		}
		slices.SortFunc(c.Advertise, func(a, b bgp.Route) int { return comparePrefix(a.Prefix, b.Prefix) })
		slices.SortFunc(c.Withdraw, comparePrefix)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Change) int { return cmp.Compare(a.Session, b.Session) })
	t.dropSettled(sessions)
	t.shrinkPending()
	return out
}

// dropSettled forgets pending routes of the given sessions that already
// match what was sent.
func (t *Table) dropSettled(sessions []string) {
	for k := range t.pending {
		if !slices.Contains(sessions, k.Session) {
			continue
		}
		want, wanted := t.want(k)
		had, sent := t.sent[k.Session][k.Prefix]
		if wanted == sent && (!wanted || sameRoute(want, had)) {
			delete(t.pending, k)
		}
	}
}

// Sent records that a Change reached its session.
func (t *Table) Sent(c Change) {
	m := t.sent[c.Session]
	if m == nil {
		m = map[netip.Prefix]bgp.Route{}
		t.sent[c.Session] = m
	}
	for _, r := range c.Advertise {
		m[r.Prefix] = r
		t.settle(Key{c.Session, r.Prefix})
	}
	for _, p := range c.Withdraw {
		delete(m, p)
		t.settle(Key{c.Session, p})
	}
	if len(m) == 0 {
		delete(t.sent, c.Session)
	}
	t.shrinkPending()
}

// settle drops a key from pending once what was sent is what is wanted.
func (t *Table) settle(k Key) {
	want, wanted := t.want(k)
	had, sent := t.sent[k.Session][k.Prefix]
	if wanted == sent && (!wanted || sameRoute(want, had)) {
		delete(t.pending, k)
	}
}

// DropSession forgets what a session was sent: it is gone, and its routes
// with it. Routes still wanted on it become pending again, for when it
// comes back.
func (t *Table) DropSession(name string) {
	for p := range t.sent[name] {
		t.markPending(Key{name, p})
	}
	delete(t.sent, name)
}

// Advertised are the sessions to which every route of src has been sent,
// sorted: what the source's ServiceBGPStatus reports. O(entries of src).
func (t *Table) Advertised(src types.NamespacedName) []string {
	complete := map[string]bool{}
	for _, e := range t.bySource[src] {
		_, sent := t.sent[e.Key.Session][e.Key.Prefix]
		if ok, seen := complete[e.Key.Session]; !seen || ok {
			complete[e.Key.Session] = sent
		}
	}
	var out []string
	for s, ok := range complete {
		if ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func sameRoute(a, b bgp.Route) bool {
	return a.Prefix == b.Prefix && a.LocalPref == b.LocalPref && slices.Equal(a.Communities, b.Communities) &&
		slices.Equal(a.LargeCommunities, b.LargeCommunities)
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

func compareLarge(a, b config.LargeCommunity) int {
	return cmp.Or(cmp.Compare(a.GlobalAdministrator, b.GlobalAdministrator),
		cmp.Compare(a.LocalData1, b.LocalData1), cmp.Compare(a.LocalData2, b.LocalData2))
}
