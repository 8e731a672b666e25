package ipam

import (
	"net/netip"
	"slices"
)

// Book is the address book. It is not safe for concurrent use: the
// controller owns one and calls it from one goroutine.
type Book struct {
	ps    *poolSet
	addrs map[netip.Addr]*addrState
	svcs  map[ServiceKey]*holder
}

// addrState is one held address.
type addrState struct {
	rs      *rangeSet // nil: in no pool (kept after Reconfigure, see there)
	key     SharingKey
	holders []ServiceKey // sorted; more than one only when sharing
	// first backs holders while there is one: most addresses are not
	// shared, and this saves an allocation per address.
	first [1]ServiceKey
}

// holder is one Service that holds addresses.
type holder struct {
	req   Request      // the request the assignment was made for
	addrs []netip.Addr // IPv4 first
	pool  string
}

// New returns an empty book over pools. It fails with a *PoolError
// (errors.Is ErrInvalidPool) if two ranges overlap, a name is empty or
// repeated, or a range is malformed. O(R log R).
func New(pools []Pool) (*Book, error) {
	ps, err := buildPools(pools)
	if err != nil {
		return nil, err
	}
	return &Book{
		ps:    ps,
		addrs: map[netip.Addr]*addrState{},
		svcs:  map[ServiceKey]*holder{},
	}, nil
}

// Assigned returns what svc holds. O(1).
func (b *Book) Assigned(svc ServiceKey) (Assignment, bool) {
	h := b.svcs[svc]
	if h == nil {
		return Assignment{}, false
	}
	return h.assignment(), true
}

func (h *holder) assignment() Assignment {
	return Assignment{Pool: h.pool, Addrs: slices.Clone(h.addrs)}
}

// Holders returns the Services holding a, sorted by namespace and name.
// O(h).
func (b *Book) Holders(a netip.Addr) []ServiceKey {
	st := b.addrs[a]
	if st == nil {
		return nil
	}
	return slices.Clone(st.holders)
}

// PoolOf returns the pool whose ranges contain a, held or not. An address
// avoidBuggyIPs excludes belongs to no pool. O(log R).
func (b *Book) PoolOf(a netip.Addr) (string, bool) {
	loc := b.ps.lookup(a)
	if loc.rs == nil || !loc.usable {
		return "", false
	}
	return loc.rs.pool.cfg.Name, true
}

// Services returns every Service that holds addresses, sorted. O(S log S).
func (b *Book) Services() []ServiceKey {
	out := make([]ServiceKey, 0, len(b.svcs))
	for k := range b.svcs {
		out = append(out, k)
	}
	slices.SortFunc(out, ServiceKey.compare)
	return out
}

// Release frees everything svc holds (a shared address stays with its
// other holders) and returns what it held. Call it only once the API
// server no longer shows the addresses on svc. O(a log n).
func (b *Book) Release(svc ServiceKey) (Assignment, bool) {
	h := b.svcs[svc]
	if h == nil {
		return Assignment{}, false
	}
	for _, a := range h.addrs {
		b.unhold(a, svc)
	}
	delete(b.svcs, svc)
	// The holder is gone, so its slice can be handed out without a copy.
	return Assignment{Pool: h.pool, Addrs: h.addrs}, true
}

// set makes req.Service hold exactly addrs (IPv4 first) from pool,
// under req. Addresses kept from the previous assignment are re-keyed in
// place, new ones taken, dropped ones released: the swap is atomic from
// the caller's view because every check happened before. O(a log n).
func (b *Book) set(req Request, addrs []netip.Addr, pool string) {
	svc := req.Service
	h := b.svcs[svc]
	if h == nil {
		h = &holder{}
		b.svcs[svc] = h
	}
	old := h.addrs
	for _, a := range addrs {
		if slices.Contains(old, a) {
			b.rekey(a, req.Sharing)
		} else {
			b.hold(a, svc, req.Sharing)
		}
	}
	for _, a := range old {
		if !slices.Contains(addrs, a) {
			b.unhold(a, svc)
		}
	}
	h.req, h.addrs, h.pool = req, addrs, pool
	if len(addrs) == 0 {
		delete(b.svcs, svc)
	}
}

// hold adds svc to a's holders, taking a from its pool when it was free.
func (b *Book) hold(a netip.Addr, svc ServiceKey, key SharingKey) {
	st := b.addrs[a]
	if st == nil {
		st = &addrState{key: key, first: [1]ServiceKey{svc}}
		st.holders = st.first[:]
		if loc := b.ps.lookup(a); loc.rs != nil && loc.usable {
			st.rs = loc.rs
			loc.rs.pool.take(loc.rs, loc.i)
		}
		st.index(a)
		b.addrs[a] = st
		return
	}
	i, _ := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	st.holders = slices.Insert(st.holders, i, svc)
}

// unhold removes svc from a's holders, freeing a when it was the last.
func (b *Book) unhold(a netip.Addr, svc ServiceKey) {
	st := b.addrs[a]
	i, ok := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	if !ok {
		return
	}
	st.holders = slices.Delete(st.holders, i, i+1)
	if len(st.holders) > 0 {
		return
	}
	st.unindex(a)
	if st.rs != nil {
		i, _ := st.rs.index(a)
		st.rs.pool.put(st.rs, i)
	}
	delete(b.addrs, a)
}

// rekey changes the sharing key of an address whose only holder changed
// its key (COMPAT: a sole user may change its key in place). Callers have
// checked that any other holders already use key, so this is a no-op for
// shared addresses.
func (b *Book) rekey(a netip.Addr, key SharingKey) {
	st := b.addrs[a]
	if st.key == key {
		return
	}
	st.unindex(a)
	st.key = key
	st.index(a)
}
