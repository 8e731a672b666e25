package ipam

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"go4.org/netipx"
)

// rangeSet is one range of a pool: its free indexes and the mapping
// between addresses and indexes.
//
// Without avoidBuggyIPs an address's index is its integer value. With it
// (IPv4 only) the usable addresses x.y.z.1 .. x.y.z.254 are numbered
// densely, index = (v>>8)*254 + (v&0xff) - 1, so .0 and .255 never exist
// in index space and "lowest free" needs no skipping: O(1) both ways.
type rangeSet struct {
	pool  *pool
	r     netipx.IPRange
	fam   Family
	buggy bool // avoidBuggyIPs applies (IPv4 only)
	order int  // position in the pool's spec order
	total u128 // usable addresses (saturates for an IPv6 /0)
	free  *spanSet
}

func newRangeSet(p *pool, r netipx.IPRange, order int) *rangeSet {
	rs := &rangeSet{pool: p, r: r, fam: FamilyOf(r.From()), order: order}
	rs.buggy = rs.fam == IPv4 && p.cfg.AvoidBuggyIPs
	lo, hi, ok := rs.bounds()
	if ok {
		rs.total = spanLen(lo, hi)
	}
	rs.free = newSpanSet(lo, hi, !ok)
	return rs
}

// bounds returns the first and last usable index; ok is false when the
// range has no usable address (e.g. 10.0.0.255-10.0.1.0 avoiding buggy IPs).
func (rs *rangeSet) bounds() (lo, hi u128, ok bool) {
	from, to := addrValue(rs.r.From()), addrValue(rs.r.To())
	if !rs.buggy {
		return from, to, true
	}
	f, okf := ceilUsable(uint32(from.lo))
	t, okt := floorUsable(uint32(to.lo))
	if !okf || !okt || f > t {
		return u128{}, u128{}, false
	}
	return u64(buggyIndex(f)), u64(buggyIndex(t)), true
}

// index maps an address of the range to its index; ok is false for an
// address avoidBuggyIPs excludes. O(1).
func (rs *rangeSet) index(a netip.Addr) (u128, bool) {
	v := addrValue(a)
	if !rs.buggy {
		return v, true
	}
	if o := v.lo & 0xff; o == 0 || o == 0xff {
		return u128{}, false
	}
	return u64(buggyIndex(uint32(v.lo))), true
}

// addr is the inverse of index. O(1).
func (rs *rangeSet) addr(i u128) netip.Addr {
	if !rs.buggy {
		return valueAddr(rs.fam, i)
	}
	return valueAddr(IPv4, u64(uint64(buggyAddr(i.lo))))
}

func buggyIndex(v uint32) uint64 { return uint64(v>>8)*254 + uint64(v&0xff) - 1 }
func buggyAddr(i uint64) uint32  { return uint32(i/254)<<8 | uint32(i%254+1) }

// ceilUsable is the lowest address >= v not ending in .0 or .255.
func ceilUsable(v uint32) (uint32, bool) {
	switch v & 0xff {
	case 0:
		return v + 1, true
	case 0xff:
		if v == 0xffffffff {
			return 0, false
		}
		return v + 2, true
	}
	return v, true
}

// floorUsable is the highest address <= v not ending in .0 or .255.
func floorUsable(v uint32) (uint32, bool) {
	switch v & 0xff {
	case 0xff:
		return v - 1, true
	case 0:
		if v == 0 {
			return 0, false
		}
		return v - 2, true
	}
	return v, true
}

// pool is the book's state for one Pool.
type pool struct {
	cfg    Pool
	ranges []*rangeSet // spec order
	total  [2]u128     // usable addresses per family
	free   [2]u128     // free addresses per family, kept incrementally
	// shared indexes the addresses held under each non-empty sharing
	// key, ordered like allocation (family, range order, address), so
	// the lowest compatible shared address is found without a scan.
	shared shareIndex
}

// take marks index i of rs as used and keeps the counters in step.
func (p *pool) take(rs *rangeSet, i u128) {
	if !rs.free.take(i) {
		panic(fmt.Sprintf("ipam: %s taken twice", rs.addr(i)))
	}
	p.free[rs.fam.slot()] = p.free[rs.fam.slot()].subOne()
}

// put is the inverse of take.
func (p *pool) put(rs *rangeSet, i u128) {
	if !rs.free.put(i) {
		panic(fmt.Sprintf("ipam: %s released twice", rs.addr(i)))
	}
	p.free[rs.fam.slot()] = p.free[rs.fam.slot()].addSat(u64(1))
}

// lowestFree returns the first free address of family f in spec order.
// O(R + log s), R = ranges of the pool; O(1) when the family is full.
func (p *pool) lowestFree(f Family) (*rangeSet, netip.Addr, bool) {
	if p.free[f.slot()].isZero() {
		return nil, netip.Addr{}, false
	}
	for _, rs := range p.ranges {
		if rs.fam != f {
			continue
		}
		if i, ok := rs.free.min(); ok {
			return rs, rs.addr(i), true
		}
	}
	return nil, netip.Addr{}, false
}

// poolSet is one validated, immutable pool configuration.
type poolSet struct {
	byName map[string]*pool
	sorted []*pool     // by name: deterministic iteration
	index  []*rangeSet // every range, by first address, for lookups
}

// location is where an address falls in a pool set.
type location struct {
	rs     *rangeSet // nil: in no range
	i      u128
	usable bool // false: excluded by avoidBuggyIPs
}

// lookup finds the range holding a. O(log R), R = ranges of all pools.
func (ps *poolSet) lookup(a netip.Addr) location {
	n, _ := slices.BinarySearchFunc(ps.index, a, func(rs *rangeSet, a netip.Addr) int {
		return rs.r.From().Compare(a)
	})
	// n is the first range starting after a, or the one starting at a.
	if n < len(ps.index) && ps.index[n].r.From() == a {
		n++
	}
	if n == 0 || !ps.index[n-1].r.Contains(a) {
		return location{}
	}
	rs := ps.index[n-1]
	i, ok := rs.index(a)
	return location{rs: rs, i: i, usable: ok}
}

// buildPools validates cfgs and builds their free sets. Validation: names
// non-empty and unique; ranges valid (netipx drops zones), without
// IPv4-mapped IPv6 addresses; no two ranges overlap, within a pool or across pools.
// O(R log R).
func buildPools(cfgs []Pool) (*poolSet, error) {
	ps := &poolSet{byName: make(map[string]*pool, len(cfgs))}
	for _, c := range cfgs {
		if err := checkPool(c); err != nil {
			return nil, err
		}
		if _, dup := ps.byName[c.Name]; dup {
			return nil, &PoolError{Pool: c.Name, Reason: "defined twice"}
		}
		p := newPool(c)
		ps.byName[c.Name] = p
		ps.sorted = append(ps.sorted, p)
		ps.index = append(ps.index, p.ranges...)
	}
	slices.SortFunc(ps.sorted, func(a, b *pool) int { return cmp.Compare(a.cfg.Name, b.cfg.Name) })
	slices.SortFunc(ps.index, func(a, b *rangeSet) int { return a.r.From().Compare(b.r.From()) })
	for i := 1; i < len(ps.index); i++ {
		prev, cur := ps.index[i-1], ps.index[i]
		if prev.r.Overlaps(cur.r) {
			return nil, overlapError(prev, cur)
		}
	}
	return ps, nil
}

func checkPool(c Pool) error {
	if c.Name == "" {
		return &PoolError{Reason: "empty name"}
	}
	for _, r := range c.Ranges {
		from, to := r.From(), r.To()
		switch {
		case !r.IsValid():
			return &PoolError{Pool: c.Name, Reason: fmt.Sprintf("invalid range %s", r)}
		case from.Is4In6() || to.Is4In6():
			return &PoolError{Pool: c.Name, Reason: fmt.Sprintf("range %s uses IPv4-mapped IPv6 addresses; write plain IPv4", r)}
		}
	}
	return nil
}

func newPool(c Pool) *pool {
	c.Ranges = slices.Clone(c.Ranges)
	p := &pool{cfg: c, shared: shareIndex{}}
	for i, r := range c.Ranges {
		rs := newRangeSet(p, r, i)
		p.ranges = append(p.ranges, rs)
		s := rs.fam.slot()
		p.total[s] = p.total[s].addSat(rs.total)
		p.free[s] = p.total[s]
	}
	return p
}

func overlapError(a, b *rangeSet) error {
	if a.pool == b.pool {
		return &PoolError{Pool: a.pool.cfg.Name, Reason: fmt.Sprintf("ranges %s and %s overlap", a.r, b.r)}
	}
	x, y := a, b
	if y.pool.cfg.Name < x.pool.cfg.Name {
		x, y = y, x
	}
	return &PoolError{Pool: x.pool.cfg.Name, Reason: fmt.Sprintf("range %s overlaps range %s of pool %q", x.r, y.r, y.pool.cfg.Name)}
}
