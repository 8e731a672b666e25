package ipam

import (
	"net/netip"
	"slices"
)

// ReconfigureReport lists what a new pool set means for existing
// assignments. Both lists are sorted by Service (then address).
type ReconfigureReport struct {
	// Invalid addresses: in no pool any more (ErrNotInPool), in a pool
	// that no longer admits the Service (ErrNotEligible), in a pool other
	// than the one the Service pins (ErrNoMatchingPool), or in another
	// pool than the Service's other address (ErrInvalidRequest).
	Invalid []Conflict
	// Moved Services: their (valid) addresses now belong to a differently
	// named pool; update the ip-allocated-from-pool annotation.
	Moved []Move
}

// Reconfigure swaps in a new pool set and reports which assignments it
// invalidates, without touching valid ones: an address that moved from
// one pool's range to another's stays with its Service and is accounted
// to the new pool.
//
// Invalid addresses stay held. The book cannot know when the API server
// stops showing them, and releasing early could hand one to a second
// Service while the first still announces it (invariant 6). The
// controller clears them (Release) or replaces them (Allocate, make
// before break) and writes the result; until then they count as assigned
// in whatever pool now contains them, and an address in no pool is held
// outside every pool (Assignment.Pool "" when none is valid).
//
// eligible, if not nil, returns each holder's new EligiblePools (the
// caller re-evaluates serviceAllocation against the new pools); it is
// stored as part of the holder's request. With nil the holders' previous
// lists are kept, which is right only when no pool's serviceAllocation
// changed and no pool without one was added.
//
// On a *PoolError (ErrInvalidPool) nothing changes. O(R log R + H log n)
// for H held addresses.
func (b *Book) Reconfigure(pools []Pool, eligible func(ServiceKey) []string) (ReconfigureReport, error) {
	ps, err := buildPools(pools)
	if err != nil {
		return ReconfigureReport{}, err
	}
	b.ps = ps
	// Map order does not matter here: the free sets end up the same
	// canonical spans whatever order addresses are taken in.
	for a, st := range b.addrs {
		st.rs, st.group = nil, nil // the old pools' sharing index goes with them
		if loc := ps.lookup(a); loc.rs != nil && loc.usable {
			st.rs = loc.rs
			loc.rs.pool.take(loc.rs, loc.i)
		}
		b.reindex(a, st)
	}
	var rep ReconfigureReport
	for _, svc := range b.Services() {
		h := b.svcs[svc]
		if eligible != nil {
			h.req.EligiblePools = slices.Clone(eligible(svc))
		}
		b.revalidate(svc, h, &rep)
	}
	slices.SortFunc(rep.Invalid, compareConflicts)
	return rep, nil
}

// revalidate re-derives a holder's pool and reports its invalid
// addresses. The holder's pool is that of its first valid address in
// primary-family order; without one, that of its first address in a
// pool, else "".
func (b *Book) revalidate(svc ServiceKey, h *holder, rep *ReconfigureReport) {
	var anchor, fallback *pool
	for _, a := range primaryFirst(h.addrs, h.req.Primary) {
		st := b.addrs[a]
		err := b.invalidity(&h.req, a, st, anchor)
		if err != nil {
			rep.Invalid = append(rep.Invalid, Conflict{Service: svc, Addr: a, Err: err})
		}
		switch {
		case st.rs == nil:
		case err == nil && anchor == nil:
			anchor = st.rs.pool
		case fallback == nil:
			fallback = st.rs.pool
		}
	}
	name := ""
	switch {
	case anchor != nil:
		name = anchor.cfg.Name
		if name != h.pool {
			rep.Moved = append(rep.Moved, Move{Service: svc, From: h.pool, To: name})
		}
	case fallback != nil:
		name = fallback.cfg.Name
	}
	h.pool = name
}

// invalidity says why a held address is no longer valid, or nil.
func (b *Book) invalidity(req *Request, a netip.Addr, st *addrState, anchor *pool) error {
	if st.rs == nil {
		if loc := b.ps.lookup(a); loc.rs != nil {
			return errorf(ErrNotInPool, "IP %s is now excluded by avoidBuggyIPs in pool %q", a, loc.rs.pool.cfg.Name)
		}
		return errorf(ErrNotInPool, "IP %s is no longer in any address pool", a)
	}
	p := st.rs.pool
	switch name := p.cfg.Name; {
	case !req.eligible(name):
		return errorf(ErrNotEligible, "IP %s is in pool %q, which does not admit this service (serviceAllocation)", a, name)
	case req.Pool != "" && req.Pool != name:
		return errorf(ErrNoMatchingPool, "IP %s is now in pool %q, but the service asks for pool %q", a, name, req.Pool)
	case anchor != nil && anchor != p:
		return errorf(ErrInvalidRequest, "IP %s is now in pool %q, but the service's other address is in pool %q", a, name, anchor.cfg.Name)
	}
	return nil
}

// primaryFirst orders a holder's addresses primary family first.
func primaryFirst(as []netip.Addr, primary Family) []netip.Addr {
	if len(as) == 2 && FamilyOf(as[0]) != primary {
		return []netip.Addr{as[1], as[0]}
	}
	return as
}
