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
	// spareHolders and spareStates are blocks RestoreSorted allocates for
	// the Services it is told it will restore, handed out one entry at a
	// time while it runs: two allocations instead of two per Service
	// (assign's BenchmarkReplay at 10,000 Services: 31.7 ms instead of
	// 35.1, 96,288 allocations instead of 115,665). A block lives as long
	// as any of its entries, and the entries of Services that hold nothing
	// stay unused: the replay's result keeps 1.3 % more memory. A holder
	// that leaves the book is cleared (forget), so a block keeps no slice
	// of a Service that has gone.
	spareHolders []holder
	spareStates  []addrState
}

// addrState is one address that is held, or being given up.
type addrState struct {
	rs      *rangeSet // nil: in no pool (kept after Reconfigure, see there)
	key     SharingKey
	holders []ServiceKey // sorted; more than one only when sharing
	// first backs holders while there is one: most addresses are not
	// shared, and this saves an allocation per address.
	first [1]ServiceKey
	// leaving lists the Services that gave the address up in a decision
	// the API server has not confirmed yet (see Book.Settle). Until it is
	// empty the address stays taken and nobody else may take or join it:
	// if the write fails, the Service still shows the address.
	leaving []ServiceKey
	// group is where the sharing index files the address, if anywhere.
	group *shareGroup
}

// holder is one Service that holds addresses or is giving some up.
type holder struct {
	req   Request      // the request the assignment was made for
	addrs []netip.Addr // IPv4 first; empty while only giving up
	pool  string
	// leaving are addresses the Service gave up, kept reserved until
	// Settle (the API server confirmed the Service no longer shows them).
	leaving []netip.Addr
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

// Assigned returns what svc holds, not counting addresses it is giving up.
// O(1).
func (b *Book) Assigned(svc ServiceKey) (Assignment, bool) {
	h := b.svcs[svc]
	if h == nil || len(h.addrs) == 0 {
		return Assignment{}, false
	}
	return h.assignment(), true
}

// Holds reports whether svc holds addresses, not counting those it is
// giving up: Assigned without the copy. O(1).
func (b *Book) Holds(svc ServiceKey) bool {
	h := b.svcs[svc]
	return h != nil && len(h.addrs) > 0
}

func (h *holder) assignment() Assignment {
	return Assignment{Pool: h.pool, Addrs: slices.Clone(h.addrs)}
}

// Terms returns the sharing key and ports svc holds its addresses under:
// those of the request its assignment was last made, kept or restored for.
// O(p).
func (b *Book) Terms(svc ServiceKey) (SharingKey, []Port, bool) {
	h := b.svcs[svc]
	if h == nil || len(h.addrs) == 0 {
		return SharingKey{}, nil, false
	}
	return h.req.Sharing, slices.Clone(h.req.Ports), true
}

// HeldRequest returns the request svc holds its addresses by, as the last
// Allocate, Retain or Restore for it took it (ports sorted), and whether
// it holds any. O(r).
func (b *Book) HeldRequest(svc ServiceKey) (Request, bool) {
	h := b.svcs[svc]
	if h == nil || len(h.addrs) == 0 {
		return Request{}, false
	}
	r := h.req
	r.RequestedIPs = slices.Clone(r.RequestedIPs)
	r.EligiblePools = slices.Clone(r.EligiblePools)
	r.Ports = slices.Clone(r.Ports)
	return r, true
}

// HoldsBy reports whether svc holds addresses by a request equal to req,
// which HeldRequest would then return. O(r).
func (b *Book) HoldsBy(svc ServiceKey, req Request) bool {
	h := b.svcs[svc]
	return h != nil && len(h.addrs) > 0 && sameRequest(h.req, req)
}

// sameRequest compares every field of two requests, slices element by
// element and nil apart from empty.
func sameRequest(x, y Request) bool {
	return x.Service == y.Service && x.Policy == y.Policy && x.Primary == y.Primary && x.Pool == y.Pool &&
		x.Sharing == y.Sharing && sameSlice(x.RequestedIPs, y.RequestedIPs) &&
		sameSlice(x.EligiblePools, y.EligiblePools) && sameSlice(x.Ports, y.Ports)
}

// SharingOf returns the sharing key svc holds its addresses under: Terms
// without the ports. O(1).
func (b *Book) SharingOf(svc ServiceKey) (SharingKey, bool) {
	h := b.svcs[svc]
	if h == nil || len(h.addrs) == 0 {
		return SharingKey{}, false
	}
	return h.req.Sharing, true
}

// SoleHolder returns the Service holding a when it is the only one:
// Holders without the copy, for the common case. O(1).
func (b *Book) SoleHolder(a netip.Addr) (ServiceKey, bool) {
	st := b.addrs[a]
	if st == nil || len(st.holders) != 1 {
		return ServiceKey{}, false
	}
	return st.holders[0], true
}

// Holders returns the Services holding a, sorted by namespace and name.
// Services giving a up are not listed. O(h).
func (b *Book) Holders(a netip.Addr) []ServiceKey {
	st := b.addrs[a]
	if st == nil || len(st.holders) == 0 {
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
	for k, h := range b.svcs {
		if len(h.addrs) > 0 {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, ServiceKey.compare)
	return out
}

// Release frees everything svc holds or is giving up (a shared address
// stays with its other holders) and returns what it held. Call it only
// once the API server no longer shows the addresses on svc: the Service
// was deleted or stopped being ours. O(a log n).
func (b *Book) Release(svc ServiceKey) (Assignment, bool) {
	h := b.svcs[svc]
	if h == nil {
		return Assignment{}, false
	}
	for _, a := range h.addrs {
		b.unhold(a, svc)
	}
	for _, a := range h.leaving {
		b.settle(a, svc)
	}
	held := len(h.addrs) > 0 || len(h.leaving) > 0
	// The holder is gone, so its slice can be handed out without a copy.
	released := Assignment{Pool: h.pool, Addrs: h.addrs}
	b.forget(svc, h)
	return released, held
}

// forget removes svc's holder from the book and clears it: a holder from
// a spare block (see Book) would otherwise keep its slices alive as long
// as the block lives.
func (b *Book) forget(svc ServiceKey, h *holder) {
	delete(b.svcs, svc)
	*h = holder{}
}

// Settle frees the addresses svc gave up in its last decisions (a move, or
// a request that no longer allows them), once the API server has confirmed
// a write that no longer shows them. It returns them; an address another
// Service still holds stays with that Service. O(a log n).
func (b *Book) Settle(svc ServiceKey) []netip.Addr {
	h := b.svcs[svc]
	if h == nil || len(h.leaving) == 0 {
		return nil
	}
	gone := h.leaving
	h.leaving = nil
	for _, a := range gone {
		b.settle(a, svc)
	}
	if len(h.addrs) == 0 {
		b.forget(svc, h)
	}
	return gone
}

// GivingUp reports whether svc gives up addresses the API server has not
// confirmed yet: whether Settle would free any. O(1).
func (b *Book) GivingUp(svc ServiceKey) bool {
	h := b.svcs[svc]
	return h != nil && len(h.leaving) > 0
}

// Leaving returns the addresses svc is giving up and the API server has
// not confirmed yet. O(1).
func (b *Book) Leaving(svc ServiceKey) []netip.Addr {
	if h := b.svcs[svc]; h != nil {
		return slices.Clone(h.leaving)
	}
	return nil
}

// set makes req.Service hold exactly addrs (IPv4 first) from pool, under
// req. Addresses kept from the previous assignment are re-termed in place,
// new ones taken, dropped ones given up: they stay reserved until Settle.
// The swap is atomic from the caller's view because every check happened
// before. It returns the holder, nil if the Service holds and gives up
// nothing any more. O(a log n).
func (b *Book) set(req Request, addrs []netip.Addr, pool string) *holder {
	return b.setFor(b.svcs[req.Service], req, addrs, pool)
}

// setFor is set for a caller that has looked the Service's holder up: h
// is what b.svcs holds for it (nil: nothing).
func (b *Book) setFor(h *holder, req Request, addrs []netip.Addr, pool string) *holder {
	svc := req.Service
	if h == nil {
		h = takeSpare(&b.spareHolders)
		b.svcs[svc] = h
	}
	old := h.addrs
	h.req, h.addrs, h.pool = req, addrs, pool
	for _, a := range addrs {
		switch {
		case slices.Contains(old, a):
			b.reterm(a, req.Sharing)
		case slices.Contains(h.leaving, a):
			h.leaving = slices.DeleteFunc(h.leaving, func(x netip.Addr) bool { return x == a })
			b.unleave(a, svc)
			b.hold(a, svc, req.Sharing)
		default:
			b.hold(a, svc, req.Sharing)
		}
	}
	for _, a := range old {
		if !slices.Contains(addrs, a) {
			b.leave(a, svc)
			h.leaving = append(h.leaving, a)
		}
	}
	if len(addrs) == 0 && len(h.leaving) == 0 {
		b.forget(svc, h)
		return nil
	}
	return h
}

// hold adds svc to a's holders, taking a from its pool when it was free.
func (b *Book) hold(a netip.Addr, svc ServiceKey, key SharingKey) {
	st := b.addrs[a]
	if st == nil {
		st = takeSpare(&b.spareStates)
		st.key, st.first = key, [1]ServiceKey{svc}
		st.holders = st.first[:]
		if loc := b.ps.lookup(a); loc.rs != nil && loc.usable {
			st.rs = loc.rs
			loc.rs.pool.take(loc.rs, loc.i)
		}
		b.addrs[a] = st
		b.reindex(a, st)
		return
	}
	if len(st.holders) == 0 {
		st.key = key
	}
	i, _ := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	st.holders = slices.Insert(st.holders, i, svc)
	b.reindex(a, st)
}

// takeSpare returns the next entry of a spare block, or a new zero T
// when the block has none left.
func takeSpare[T any](spare *[]T) *T {
	if len(*spare) == 0 {
		return new(T)
	}
	e := &(*spare)[0]
	*spare = (*spare)[1:]
	return e
}

// unhold removes svc from a's holders, freeing a when nobody holds it or
// is giving it up any more.
func (b *Book) unhold(a netip.Addr, svc ServiceKey) {
	st := b.addrs[a]
	i, ok := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	if !ok {
		return
	}
	st.holders = slices.Delete(st.holders, i, i+1)
	b.freeIfUnused(a, st)
}

// leave moves svc from a's holders to the Services giving it up.
func (b *Book) leave(a netip.Addr, svc ServiceKey) {
	st := b.addrs[a]
	i, ok := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	if !ok {
		return
	}
	st.holders = slices.Delete(st.holders, i, i+1)
	if !slices.Contains(st.leaving, svc) {
		st.leaving = append(st.leaving, svc)
	}
	b.reindex(a, st)
}

// unleave takes svc off the Services giving a up.
func (b *Book) unleave(a netip.Addr, svc ServiceKey) {
	st := b.addrs[a]
	st.leaving = slices.DeleteFunc(st.leaving, func(k ServiceKey) bool { return k == svc })
}

// settle ends svc's giving up of a, freeing it if nobody else uses it.
func (b *Book) settle(a netip.Addr, svc ServiceKey) {
	st := b.addrs[a]
	if st == nil {
		return
	}
	b.unleave(a, svc)
	b.freeIfUnused(a, st)
}

func (b *Book) freeIfUnused(a netip.Addr, st *addrState) {
	if len(st.holders) > 0 || len(st.leaving) > 0 {
		b.reindex(a, st)
		return
	}
	st.holders = nil
	b.reindex(a, st) // drops it from the sharing index
	if st.rs != nil {
		i, _ := st.rs.index(a)
		st.rs.pool.put(st.rs, i)
	}
	delete(b.addrs, a)
}

// reterm files a kept address under its holder's new terms: a sole holder
// may change its sharing key in place (as in MetalLB), and any holder may change
// its ports. Callers have checked that other holders already use key.
func (b *Book) reterm(a netip.Addr, key SharingKey) {
	st := b.addrs[a]
	st.key = key
	b.reindex(a, st)
}
