package ipam

import (
	"cmp"
	"net/netip"
	"slices"
)

// choice is a planned assignment: a pool and at most one address per
// family (zero Addr = none).
type choice struct {
	pool  *pool
	addrs [2]netip.Addr
}

func (c choice) list() []netip.Addr {
	out := make([]netip.Addr, 0, 2)
	for _, a := range c.addrs {
		if a.IsValid() {
			out = append(out, a)
		}
	}
	return out
}

// listReusing is list, but returns the addresses h holds when list would
// equal them: a kept assignment then costs no new slice.
func (c choice) listReusing(h *holder) []netip.Addr {
	if h == nil || len(h.addrs) == 0 || !c.is(h.addrs) {
		return c.list()
	}
	return h.addrs
}

// is reports whether list would equal addrs.
func (c choice) is(addrs []netip.Addr) bool {
	i := 0
	for _, a := range c.addrs {
		if !a.IsValid() {
			continue
		}
		if i == len(addrs) || addrs[i] != a {
			return false
		}
		i++
	}
	return i == len(addrs)
}

func (c choice) has(f Family) bool { return c.addrs[f.slot()].IsValid() }

// Allocate gives req.Service an assignment that satisfies req and
// returns it. Rules, in order:
//
//   - RequestedIPs set: exactly those addresses. Each must lie in a pool
//     the Service is eligible for (autoAssign does not apply), all in one
//     pool, in the pinned pool if req.Pool is set, and be free or held by
//     Services it may share with.
//   - Otherwise, if the Service holds addresses in a pool that is still
//     eligible (and is the pinned pool, if any), it keeps the ones its
//     family policy and sharing key still allow and missing families are
//     added from the same pool (keep path). Priority, autoAssign and pool
//     order never move a held address.
//   - Otherwise a fresh choice: the pinned pool; or the eligible
//     autoAssign pools with serviceAllocation by priority then name,
//     and, only if none of those has room, the eligible autoAssign pools
//     without it, by name. Inside a pool: ranges in spec order, lowest
//     free or compatibly shared address.
//
// Allocate is idempotent: a Service whose assignment satisfies req gets
// it back unchanged (its sharing key and ports are updated in place). A
// new assignment is planned while the old one is still held (make before
// break), so it can reuse an old address only by keeping it; the swap is
// then atomic. On error nothing changes: the old assignment, if any, is
// still held under the old request, and the error matches one of
// ErrPoolExhausted, ErrRequestedIPInUse, ErrNoMatchingPool,
// ErrInvalidRequest.
//
// Cost: O(E log E + R + log n + m) for E eligible pools, R ranges per
// pool, n free spans, m sharing-index entries visited; independent of
// pool size. An exhausted family fails from its counter without a scan.
func (b *Book) Allocate(req Request) (Assignment, error) {
	if err := checkRequest(req); err != nil {
		return Assignment{}, err
	}
	h := b.svcs[req.Service]
	req = req.cloneReusing(h)
	c, err := b.plan(&req, h)
	if err != nil {
		return Assignment{}, err
	}
	return b.setFor(h, req, c.listReusing(h), c.pool.cfg.Name).assignment(), nil
}

// Unchanged returns what Allocate(req) would return when Allocate would
// change nothing: req's Service holds addresses by req (its ports in any
// order: Allocate sorts a copy), and the plan for req keeps exactly them,
// in the same pool, under the same sharing key. ok is false otherwise,
// when Allocate would fail too. It only reads the book, so several
// goroutines may call it at once while nothing changes the book: a
// replay decides a run of Services that keep what they hold that way, in
// any order (decisions that change nothing commute).
func (b *Book) Unchanged(req Request) (a Assignment, ok bool) {
	if checkRequest(req) != nil {
		return Assignment{}, false
	}
	h := b.svcs[req.Service]
	if h == nil || len(h.addrs) == 0 || !sameRequestAnyPortOrder(req, h.req) {
		return Assignment{}, false
	}
	held := h.req // plan takes a pointer; the book's copy stays out of reach
	c, err := b.plan(&held, h)
	if err != nil || c.pool.cfg.Name != h.pool || !c.is(h.addrs) {
		return Assignment{}, false
	}
	for _, a := range h.addrs {
		if b.addrs[a].key != held.Sharing { // Allocate would re-term it
			return Assignment{}, false
		}
	}
	return h.assignment(), true
}

// sameRequestAnyPortOrder is sameRequest(req, held) once req's ports are
// sorted as held's are, for ports few enough to sort on the stack (a
// Service with more is reported different: its decision is then taken the
// long way).
func sameRequestAnyPortOrder(req, held Request) bool {
	if !slices.IsSortedFunc(req.Ports, Port.compare) {
		var sorted [8]Port
		if len(req.Ports) > len(sorted) {
			return false
		}
		req.Ports = append(sorted[:0], req.Ports...)
		slices.SortFunc(req.Ports, Port.compare)
	}
	return sameRequest(req, held)
}

// plan chooses for req; h is what its Service holds (nil: nothing).
func (b *Book) plan(req *Request, h *holder) (choice, error) {
	var pinned *pool
	if req.Pool != "" {
		pinned = b.ps.byName[req.Pool]
		if pinned == nil {
			return choice{}, errorf(ErrUnknownPool, "pool %q does not exist", req.Pool)
		}
		if !req.eligible(pinned.cfg.Name) {
			return choice{}, errorf(ErrNotEligible, "pool %q does not admit this service (serviceAllocation)", req.Pool)
		}
	}
	if len(req.RequestedIPs) > 0 {
		return b.planRequested(req, pinned)
	}
	if h != nil {
		if c, ok := b.planKeep(req, h, pinned); ok {
			return c, nil
		}
	}
	if pinned != nil {
		tier := []*pool{pinned}
		if c, ok := b.pick(tier, req); ok {
			return c, nil
		}
		return choice{}, noRoomError(req, tier, true)
	}
	cands, split := b.candidates(req)
	if len(cands) == 0 {
		return choice{}, errorf(ErrNoMatchingPool, "no address pool with autoAssign is available to this service")
	}
	for _, tier := range [2][]*pool{cands[:split], cands[split:]} {
		if c, ok := b.pick(tier, req); ok {
			return c, nil
		}
	}
	return choice{}, noRoomError(req, cands, false)
}

// planRequested checks the requested addresses. O(a (log R + h p)).
func (b *Book) planRequested(req *Request, pinned *pool) (choice, error) {
	var c choice
	for _, a := range req.RequestedIPs {
		loc := b.ps.lookup(a)
		switch {
		case loc.rs == nil:
			return choice{}, errorf(ErrNotInPool, "requested IP %s is not in any address pool", a)
		case !loc.usable:
			return choice{}, errorf(ErrNotInPool, "requested IP %s is excluded by avoidBuggyIPs in pool %q", a, loc.rs.pool.cfg.Name)
		}
		p := loc.rs.pool
		switch name := p.cfg.Name; {
		case pinned != nil && p != pinned:
			return choice{}, errorf(ErrInvalidRequest, "requested IP %s is in pool %q, not in the requested pool %q", a, name, pinned.cfg.Name)
		case !req.eligible(name):
			return choice{}, errorf(ErrNotEligible, "requested IP %s is in pool %q, which does not admit this service (serviceAllocation)", a, name)
		case c.pool != nil && c.pool != p:
			return choice{}, errorf(ErrInvalidRequest, "requested IPs are in different pools (%q and %q); all addresses of a service must come from one pool", c.pool.cfg.Name, name)
		}
		if st := b.addrs[a]; st != nil {
			if why := b.shareProblem(st, req.Service, req.Sharing, req.Ports); why != "" {
				return choice{}, &InUseError{Addr: a, Holders: st.others(req.Service), Why: why}
			}
		}
		c.pool = p
		c.addrs[FamilyOf(a).slot()] = a
	}
	return c, nil
}

// planKeep keeps what the Service holds in its pool, if that pool still
// serves it, and adds missing families from the same pool. The pool
// already serves the Service, so adding a family does not need
// autoAssign. ok is false when a fresh choice is needed.
func (b *Book) planKeep(req *Request, h *holder, pinned *pool) (choice, bool) {
	c, ok := b.keepable(req, h, pinned)
	if !ok {
		return choice{}, false
	}
	for _, f := range families {
		if !c.has(f) && req.Policy.wants(req.Primary, f) {
			if a, ok := b.lowest(c.pool, f, req); ok {
				c.addrs[f.slot()] = a
			}
		}
	}
	return c, satisfies(req, c)
}

// keepable returns the addresses of h that req still allows: in h's pool,
// which must still exist, admit the Service and be the pinned pool if any;
// of a family the policy wants; shareable with the other holders under
// req's key and ports. ok is false when none is.
func (b *Book) keepable(req *Request, h *holder, pinned *pool) (choice, bool) {
	p := b.ps.byName[h.pool]
	if p == nil || !req.eligible(p.cfg.Name) || (pinned != nil && pinned != p) {
		return choice{}, false
	}
	c := choice{pool: p}
	for _, a := range h.addrs {
		st := b.addrs[a]
		f := FamilyOf(a)
		if st.rs == nil || st.rs.pool != p || !req.Policy.wants(req.Primary, f) {
			continue
		}
		if b.shareProblem(st, req.Service, req.Sharing, req.Ports) != "" {
			continue
		}
		c.addrs[f.slot()] = a
	}
	return c, c.has(IPv4) || c.has(IPv6)
}

// satisfies reports whether a choice is enough for the family policy.
func satisfies(req *Request, c choice) bool {
	switch req.Policy {
	case SingleStack:
		return c.has(req.Primary)
	case RequireDualStack:
		return c.has(IPv4) && c.has(IPv6)
	}
	return true // PreferDualStack: one family is enough
}

// Retain is for a Service whose new request Allocate refused: make before
// break keeps what it holds as long as the new request still allows it.
// Retain keeps the addresses req allows (see keepable), re-termed under
// req so that later sharing checks see the Service's current ports and
// key, and gives up the rest: they stay reserved until Settle. Under
// RequireDualStack both families stay or neither does; SingleStack needs
// its primary family. It returns what the Service keeps. A request that
// fails the basic checks changes nothing. O(a (h p + log n)).
func (b *Book) Retain(req Request) Assignment {
	h := b.svcs[req.Service]
	if h == nil || len(h.addrs) == 0 {
		return Assignment{}
	}
	if checkBasics(req) != nil {
		return h.assignment()
	}
	req = req.clone()
	var pinned *pool
	if req.Pool != "" {
		if pinned = b.ps.byName[req.Pool]; pinned == nil {
			b.set(req, nil, "")
			return Assignment{}
		}
	}
	c, ok := b.keepable(&req, h, pinned)
	if !ok || !satisfies(&req, c) {
		b.set(req, nil, "")
		return Assignment{}
	}
	b.set(req, c.list(), c.pool.cfg.Name)
	return b.svcs[req.Service].assignment()
}

// candidates returns the automatic pools in the order they are tried,
// in two tiers: cands[:split] are the pools with serviceAllocation, by
// priority (positive ascending, then unset) and name; cands[split:] are
// the pools without it, by name (MetalLB uses random map order there; we
// must be deterministic). The second tier is tried only if no pool of the
// first has room. O(E log E).
func (b *Book) candidates(req *Request) (cands []*pool, split int) {
	cands = make([]*pool, 0, len(req.EligiblePools))
	for _, name := range req.EligiblePools {
		p := b.ps.byName[name]
		if p != nil && p.cfg.AutoAssign && !slices.Contains(cands, p) {
			cands = append(cands, p)
		}
	}
	slices.SortFunc(cands, func(x, y *pool) int {
		if x.cfg.HasServiceAllocation != y.cfg.HasServiceAllocation {
			if x.cfg.HasServiceAllocation {
				return -1
			}
			return 1
		}
		if !x.cfg.HasServiceAllocation {
			return cmp.Compare(x.cfg.Name, y.cfg.Name)
		}
		return comparePriority(x, y)
	})
	split = slices.IndexFunc(cands, func(p *pool) bool { return !p.cfg.HasServiceAllocation })
	if split < 0 {
		split = len(cands)
	}
	return cands, split
}

func comparePriority(a, b *pool) int {
	pa, pb := a.cfg.Priority, b.cfg.Priority
	switch {
	case pa > 0 && pb <= 0:
		return -1
	case pa <= 0 && pb > 0:
		return 1
	case pa > 0 && pa != pb:
		return cmp.Compare(pa, pb)
	}
	return cmp.Compare(a.cfg.Name, b.cfg.Name)
}

// pick makes a fresh choice from the first pool of tier that can serve
// the family policy. PreferDualStack tries, in this order across the
// tier: a pool with room in both families, the primary family, the
// secondary family.
func (b *Book) pick(tier []*pool, req *Request) (choice, bool) {
	want := [][]Family{{req.Primary}}
	switch req.Policy {
	case RequireDualStack:
		want = [][]Family{{IPv4, IPv6}}
	case PreferDualStack:
		want = [][]Family{{IPv4, IPv6}, {req.Primary}, {req.Primary.other()}}
	}
	for _, fams := range want {
		for _, p := range tier {
			if c, ok := b.fill(p, fams, req); ok {
				return c, true
			}
		}
	}
	return choice{}, false
}

// fill picks one fresh address per family from p, or fails.
func (b *Book) fill(p *pool, fams []Family, req *Request) (choice, bool) {
	c := choice{pool: p}
	for _, f := range fams {
		a, ok := b.lowest(p, f, req)
		if !ok {
			return choice{}, false
		}
		c.addrs[f.slot()] = a
	}
	return c, true
}
