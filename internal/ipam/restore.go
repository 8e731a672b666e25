package ipam

import (
	"errors"
	"iter"
	"net/netip"
	"slices"
	"time"
)

// Restore registers assignments found in Services' status, without
// allocating anything, so that a restarted controller knows every valid
// assignment before it hands out a single address (startup barrier).
//
// Claims are processed in Created order, ties by ServiceKey, whatever
// their order in the slice: on a duplicate the earlier claim keeps the
// address. Each address is judged on its own, so a Service keeps the
// addresses that are valid. An address is refused, and reported as a
// Conflict, when it
//
//   - is not valid, or is of a family the request does not use
//     (ErrInvalidRequest, ErrFamilyMismatch), or is one of two
//     addresses of one family (ErrInvalidRequest);
//   - lies in no pool, or is excluded by avoidBuggyIPs (ErrNotInPool);
//   - lies in a pool the Service is not eligible for (ErrNotEligible);
//   - lies in another pool than the Service's other address, whose
//     primary-family address wins (ErrInvalidRequest);
//   - is held by an earlier claim, or by a Service already in the book,
//     that it may not share with (*InUseError naming the holder).
//
// A claim for a Service the book already knows, or a Service claimed
// twice in one call, is refused whole (ErrInvalidRequest). Services
// already in the book always keep their addresses: once the book is live
// they were given out legitimately, and invariant 1 says another Service
// appearing must not move them. Hence the controller passes all claims
// found at startup in one call; order independence is exact within a
// call.
//
// Restore checks validity, not whether the assignment still satisfies the
// request (requested IPs, pinned pool, sharing key, missing family):
// Allocate, called next, handles that make before break.
//
// Conflicts are sorted by Service and address. O(c log c + a log n).
func (b *Book) Restore(claims []Claim) []Conflict {
	order := make([]*Claim, len(claims))
	count := make(map[ServiceKey]int, len(claims))
	if len(b.svcs) == 0 {
		// Startup: size the maps once instead of growing them 17 times.
		b.svcs = make(map[ServiceKey]*holder, len(claims))
		b.addrs = make(map[netip.Addr]*addrState, len(claims))
	}
	for i := range claims {
		order[i] = &claims[i]
		count[claims[i].Request.Service]++
	}
	slices.SortStableFunc(order, func(x, y *Claim) int {
		return compareClaims(x.Created, x.Request.Service, y.Created, y.Request.Service)
	})
	var out []Conflict
	for _, c := range order {
		svc := c.Request.Service
		switch n := count[svc]; {
		case n > 1:
			out = append(out, Conflict{Service: svc, Err: errorf(ErrInvalidRequest, "service %s is claimed %d times", svc, n)})
			count[svc] = -1 // report once
			continue
		case n < 0:
			continue
		case b.svcs[svc] != nil:
			out = append(out, Conflict{Service: svc, Err: errorf(ErrInvalidRequest, "service %s already holds an assignment", svc)})
			continue
		}
		if err := checkBasics(c.Request); err != nil {
			out = append(out, Conflict{Service: svc, Err: err})
			continue
		}
		out = append(out, b.restoreOne(c, false)...)
	}
	SortConflicts(out)
	return out
}

// RestoreSorted is Restore for claims that come in the order Restore
// takes them in, Created then ServiceKey, and name each Service once: a
// starting controller's claims, its Services sorted oldest first. It
// registers each claim as it comes, so the caller makes one claim at a
// time instead of a slice of them all, which at 10,000 Services is
// megabytes the book never keeps. n is how many claims to expect, to size
// the book. A claim that does not come after the one before it in that
// order is refused whole (ErrInvalidRequest). For claims in order, each
// Service once, the book and the conflicts are Restore's. The book takes
// each claim's slices over (its addresses and its request's), as made for
// it: the caller must not use them once it has passed the claim on.
func (b *Book) RestoreSorted(n int, claims iter.Seq[*Claim]) []Conflict {
	if len(b.svcs) == 0 && n > 0 {
		b.svcs = make(map[ServiceKey]*holder, n)
		b.addrs = make(map[netip.Addr]*addrState, n)
		b.spareHolders, b.spareStates = make([]holder, n), make([]addrState, n)
		defer func() { b.spareHolders, b.spareStates = nil, nil }()
	}
	var (
		out         []Conflict
		prevCreated time.Time
		prev        ServiceKey
		started     bool
	)
	for c := range claims {
		svc := c.Request.Service
		if started && compareClaims(c.Created, svc, prevCreated, prev) <= 0 {
			out = append(out, Conflict{Service: svc, Err: errorf(ErrInvalidRequest,
				"service %s is claimed out of order: created %s, after %s created %s",
				svc, c.Created.UTC().Format(time.RFC3339), prev, prevCreated.UTC().Format(time.RFC3339))})
			continue
		}
		started, prevCreated, prev = true, c.Created, svc
		out = append(out, b.restoreClaim(c)...)
	}
	SortConflicts(out)
	return out
}

// RestoreUnordered registers one claim as RestoreSorted would if it came
// next, wherever it stands in Restore's order: for a caller that restores
// claims as it reads them, in another order (the plugin, while the
// Service LIST arrives in namespace and name order). The book and the
// conflicts (sorted by SortConflicts) are Restore's of the same claims as
// long as no conflict depends on the order (Conflict.DependsOnOrder: an
// address both of two claims show, which the older one keeps): accepted
// claims are accepted in any order (each was checked against every
// holder that came before it, and sharing is symmetric), and every other
// refusal is the claim's own (TestRestore checks both in every order of
// its cases). So once it returns a conflict that depends on the order,
// the caller must not use the book and restores again, in order. The
// book takes the claim's slices over.
func (b *Book) RestoreUnordered(c *Claim) []Conflict {
	return b.restoreClaim(c)
}

// DependsOnOrder reports whether Restore might have decided the conflict
// otherwise had the claims come in another order: an address another
// claim holds (*InUseError), or a Service claimed twice. Every other
// conflict is about the claim alone (an address in no pool, or in one that
// does not admit the Service; the wrong family; two addresses of a family
// or in two pools; a request that cannot be read) and comes out the same
// in any order.
func (c Conflict) DependsOnOrder() bool {
	var inUse *InUseError
	return errors.As(c.Err, &inUse) || errors.Is(c.Err, errClaimedTwice)
}

// errClaimedTwice marks the conflict of a Service claimed a second time.
var errClaimedTwice error = &kind{"service claimed twice", ErrInvalidRequest}

// SortConflicts sorts conflicts as Restore returns them: by Service, then
// address.
func SortConflicts(cs []Conflict) {
	slices.SortFunc(cs, compareConflicts)
}

// restoreClaim registers one claim of a Service the book may not know
// yet.
func (b *Book) restoreClaim(c *Claim) []Conflict {
	svc := c.Request.Service
	if b.svcs[svc] != nil {
		return []Conflict{{Service: svc, Err: errorf(errClaimedTwice, "service %s already holds an assignment", svc)}}
	}
	if err := checkBasics(c.Request); err != nil {
		return []Conflict{{Service: svc, Err: err}}
	}
	return b.restoreOne(c, true)
}

// compareClaims orders claims as Restore takes them.
func compareClaims(xCreated time.Time, x ServiceKey, yCreated time.Time, y ServiceKey) int {
	if c := xCreated.Compare(yCreated); c != 0 {
		return c
	}
	return x.compare(y)
}

func compareConflicts(x, y Conflict) int {
	if c := x.Service.compare(y.Service); c != 0 {
		return c
	}
	return x.Addr.Compare(y.Addr)
}

// restoreOne registers what is valid of one claim. owned: the book may
// keep the claim's slices and sort them in place rather than copy them.
func (b *Book) restoreOne(c *Claim, owned bool) []Conflict {
	req := c.Request
	if owned {
		slices.SortFunc(req.Ports, Port.compare)
	} else {
		req = req.clone()
	}
	var out []Conflict
	refuse := func(a netip.Addr, err error) []Conflict {
		return append(out, Conflict{Service: req.Service, Addr: a, Err: err})
	}
	var cand [2]location
	var addrs [2]netip.Addr
	var twice [2]bool
	sorted := c.Addrs
	if owned {
		slices.SortFunc(sorted, netip.Addr.Compare)
	} else {
		sorted = sortedAddrs(sorted)
	}
	sorted = slices.Compact(sorted)
	for _, a := range sorted {
		if err := checkAddr("IP", a); err != nil {
			out = refuse(a, err)
			continue
		}
		f := FamilyOf(a)
		if !req.Policy.wants(req.Primary, f) {
			out = refuse(a, errorf(ErrFamilyMismatch, "IP %s is %s, but the service is single-stack %s", a, f, req.Primary))
			continue
		}
		if prev := addrs[f.slot()]; prev.IsValid() {
			err := errorf(ErrInvalidRequest, "service %s holds more than one %s address", req.Service, f)
			if !twice[f.slot()] {
				out = refuse(prev, err)
			}
			out = refuse(a, err)
			twice[f.slot()], cand[f.slot()] = true, location{}
			continue
		}
		addrs[f.slot()] = a
		if loc, err := b.claimable(&req, a); err != nil {
			out = refuse(a, err)
		} else {
			cand[f.slot()] = loc
		}
	}
	keep, p, split := onePool(sorted[:0], &req, cand, addrs)
	if split.IsValid() {
		other := b.ps.lookup(split).rs.pool.cfg.Name
		out = refuse(split, errorf(ErrInvalidRequest, "IP %s is in pool %q, but the service's %s address is in pool %q", split, other, req.Primary, p))
	}
	if len(keep) > 0 {
		b.setFor(nil, req, keep, p) // both callers checked that the book does not know the Service
	}
	return out
}

// claimable checks one claimed address against the pools and holders.
func (b *Book) claimable(req *Request, a netip.Addr) (location, error) {
	loc := b.ps.lookup(a)
	switch {
	case loc.rs == nil:
		return loc, errorf(ErrNotInPool, "IP %s is not in any address pool", a)
	case !loc.usable:
		return loc, errorf(ErrNotInPool, "IP %s is excluded by avoidBuggyIPs in pool %q", a, loc.rs.pool.cfg.Name)
	case !req.eligible(loc.rs.pool.cfg.Name):
		return loc, errorf(ErrNotEligible, "IP %s is in pool %q, which does not admit this service (serviceAllocation)", a, loc.rs.pool.cfg.Name)
	}
	if st := b.addrs[a]; st != nil {
		if why := b.shareProblem(st, req.Service, req.Sharing, req.Ports); why != "" {
			return loc, &InUseError{Addr: a, Holders: st.others(req.Service), Why: why, claimed: true}
		}
	}
	return loc, nil
}

// onePool appends to keep the valid addresses that lie in the pool of the
// first valid one in primary-family order. With two valid addresses in
// different pools, the secondary one is returned as split.
func onePool(keep []netip.Addr, req *Request, cand [2]location, addrs [2]netip.Addr) (_ []netip.Addr, poolName string, split netip.Addr) {
	var p *pool
	for _, f := range [2]Family{req.Primary, req.Primary.other()} {
		loc := cand[f.slot()]
		switch {
		case loc.rs == nil:
		case p != nil && loc.rs.pool != p:
			split = addrs[f.slot()]
		default:
			p = loc.rs.pool
			keep = append(keep, addrs[f.slot()])
		}
	}
	if p == nil {
		return nil, "", split
	}
	if len(keep) == 2 && keep[0].Is6() {
		keep[0], keep[1] = keep[1], keep[0]
	}
	return keep, p.cfg.Name, split
}

// sortedAddrs returns a sorted copy: IPv4 before IPv6, as assignments are.
func sortedAddrs(as []netip.Addr) []netip.Addr {
	out := slices.Clone(as)
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
