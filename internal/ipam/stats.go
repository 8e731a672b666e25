package ipam

// FamilyStats counts one family of one pool. Total is the number of
// usable addresses (avoidBuggyIPs exclusions not counted), Assigned the
// addresses held (a shared address once, an invalid but still held one
// too), Available = Total - Assigned.
type FamilyStats struct {
	Total, Assigned, Available Count
}

// Stats are the counters of one pool, for IPAddressPool status and the
// metallb_allocator_* metrics.
//
// The counters are kept incrementally on every take and release, never
// recounted. They are exact up to 2^128-1 addresses: only a pool holding
// an entire IPv6 /0 (2^128 addresses) saturates, and then its Total and
// Available read one less than the truth while Assigned stays exact.
type Stats struct {
	Pool       string
	IPv4, IPv6 FamilyStats
}

// Stats returns the counters of one pool. O(1).
func (b *Book) Stats(pool string) (Stats, bool) {
	p := b.ps.byName[pool]
	if p == nil {
		return Stats{}, false
	}
	return p.stats(), true
}

// AllStats returns the counters of every pool, sorted by pool name. O(P).
func (b *Book) AllStats() []Stats {
	out := make([]Stats, len(b.ps.sorted))
	for i, p := range b.ps.sorted {
		out[i] = p.stats()
	}
	return out
}

func (p *pool) stats() Stats {
	fs := func(f Family) FamilyStats {
		t, free := p.total[f.slot()], p.free[f.slot()]
		return FamilyStats{Total: Count{t}, Assigned: Count{t.sub(free)}, Available: Count{free}}
	}
	return Stats{Pool: p.cfg.Name, IPv4: fs(IPv4), IPv6: fs(IPv6)}
}
