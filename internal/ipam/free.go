package ipam

import "go4.org/netipx"

// FreeRanges returns the free addresses of one pool as ranges, in spec
// order of the pool's ranges and ascending inside each, so that a /64 with
// a few holes is a few lines, not 2^64. With avoidBuggyIPs a range may
// span an excluded .255 or .0 address: it is not free, it only does not
// split the range. ok is false for an unknown pool. O(s), s = spans of the
// pool.
func (b *Book) FreeRanges(pool string) (ranges []netipx.IPRange, ok bool) {
	p := b.ps.byName[pool]
	if p == nil {
		return nil, false
	}
	for _, rs := range p.ranges {
		for _, sp := range rs.free.spans() {
			ranges = append(ranges, netipx.IPRangeFrom(rs.addr(sp.lo), rs.addr(sp.hi)))
		}
	}
	return ranges, true
}
