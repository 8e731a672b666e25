package ipam

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

func checkInvariants(t testing.TB, b *Book) {
	t.Helper()
	if err := invariantError(b); err != nil {
		t.Fatal(err)
	}
}

// invariantError recounts everything the book keeps incrementally and
// checks uniqueness. It reads internals on purpose: it is the oracle.
func invariantError(b *Book) error {
	for svc, h := range b.svcs {
		if err := checkHolder(b, svc, h); err != nil {
			return err
		}
	}
	held := map[*pool]*[2]u128{}
	sharedCount := map[*pool]int{}
	for a, st := range b.addrs {
		if err := checkAddrState(b, a, st); err != nil {
			return err
		}
		if st.rs != nil {
			p := st.rs.pool
			if held[p] == nil {
				held[p] = &[2]u128{}
			}
			held[p][st.rs.fam.slot()] = held[p][st.rs.fam.slot()].addOne()
			if st.group != nil {
				sharedCount[p]++
			}
		}
	}
	for _, p := range b.ps.sorted {
		if err := checkCounters(p, held[p], sharedCount[p]); err != nil {
			return err
		}
	}
	return nil
}

func checkHolder(b *Book, svc ServiceKey, h *holder) error {
	if (len(h.addrs) == 0 && len(h.leaving) == 0) || len(h.addrs) > 2 {
		return fmt.Errorf("%s holds %d addresses and gives up %d", svc, len(h.addrs), len(h.leaving))
	}
	for _, a := range h.leaving {
		st := b.addrs[a]
		if st == nil || !slices.Contains(st.leaving, svc) || st.holds(svc) {
			return fmt.Errorf("%s gives up %s but the address does not say so", svc, a)
		}
	}
	if len(h.addrs) == 2 && (!h.addrs[0].Is4() || !h.addrs[1].Is6()) {
		return fmt.Errorf("%s holds %v: want one IPv4 then one IPv6", svc, h.addrs)
	}
	for _, a := range h.addrs {
		st := b.addrs[a]
		if st == nil || !st.holds(svc) {
			return fmt.Errorf("%s holds %s but the address does not list it", svc, a)
		}
	}
	return nil
}

func checkAddrState(b *Book, a netip.Addr, st *addrState) error {
	if (len(st.holders) == 0 && len(st.leaving) == 0) || !slices.IsSortedFunc(st.holders, ServiceKey.compare) {
		return fmt.Errorf("%s: holders %v empty or unsorted", a, st.holders)
	}
	for _, k := range st.leaving {
		if h := b.svcs[k]; h == nil || !slices.Contains(h.leaving, a) {
			return fmt.Errorf("%s lists %s as giving it up, which it does not", a, k)
		}
	}
	shareable := st.rs != nil && st.key.Sharing != "" && len(st.holders) > 0 && len(st.leaving) == 0
	if shareable != (st.group != nil) {
		return fmt.Errorf("%s: in the sharing index %v, should be %v", a, st.group != nil, shareable)
	}
	if st.group != nil {
		if want := portSig(b.portsOf(st.holders)); st.group.sig != want || st.group.key != st.key {
			return fmt.Errorf("%s filed under %v %q, want %v %q", a, st.group.key, st.group.sig, st.key, want)
		}
	}
	for _, k := range st.holders {
		h := b.svcs[k]
		if h == nil || !slices.Contains(h.addrs, a) {
			return fmt.Errorf("%s lists %s, which does not hold it", a, k)
		}
		if h.req.Sharing != st.key {
			return fmt.Errorf("%s: holder %s key %v, address key %v", a, k, h.req.Sharing, st.key)
		}
	}
	if len(st.holders) > 1 {
		if st.key.Sharing == "" {
			return fmt.Errorf("%s held by %v without a sharing key", a, st.holders)
		}
		for i, x := range st.holders {
			for _, y := range st.holders[i+1:] {
				if p, ok := overlap(b.svcs[x].req.Ports, b.svcs[y].req.Ports); ok {
					return fmt.Errorf("%s shared by %s and %s, both on %s", a, x, y, p)
				}
			}
		}
	}
	loc := b.ps.lookup(a)
	want := loc.rs
	if !loc.usable {
		want = nil
	}
	if st.rs != want {
		return fmt.Errorf("%s accounted to the wrong range", a)
	}
	if st.rs != nil && st.rs.free.contains(loc.i) {
		return fmt.Errorf("%s is held and free at once", a)
	}
	return nil
}

func checkCounters(p *pool, held *[2]u128, shared int) error {
	if held == nil {
		held = &[2]u128{}
	}
	for _, f := range families {
		var total, free u128
		for _, rs := range p.ranges {
			if rs.fam != f {
				continue
			}
			total = total.addSat(bruteTotal(rs))
			var spans u128
			for _, sp := range rs.free.spans() {
				spans = spans.addSat(spanLen(sp.lo, sp.hi))
			}
			if spans != rs.free.n {
				return fmt.Errorf("pool %s range %s: span sum %v, counter %v", p.cfg.Name, rs.r, spans, rs.free.n)
			}
			free = free.addSat(spans)
		}
		s := f.slot()
		if total != p.total[s] || free != p.free[s] || total.sub(free) != held[s] {
			return fmt.Errorf("pool %s %s: total %v/%v free %v/%v held %v", p.cfg.Name, f,
				p.total[s], total, p.free[s], free, held[s])
		}
	}
	if n := p.shared.entries(); n != shared {
		return fmt.Errorf("pool %s: sharing index has %d entries, want %d", p.cfg.Name, p.shared.entries(), shared)
	}
	return nil
}

// bruteTotal counts usable addresses one by one for small ranges, and
// trusts the arithmetic for big ones.
func bruteTotal(rs *rangeSet) u128 {
	if addrValue(rs.r.To()).sub(addrValue(rs.r.From())).cmp(u64(1<<12)) > 0 {
		return rs.total
	}
	var n u128
	for a := rs.r.From(); ; a = a.Next() {
		if _, ok := rs.index(a); ok {
			n = n.addOne()
		}
		if a == rs.r.To() {
			return n
		}
	}
}

func TestInvariantCheckerCatchesCorruption(t *testing.T) {
	b := mustBook(t, mkPool("a", []string{"10.0.0.0/30"}))
	if _, err := b.Allocate(mkReq("x", eligible("a"))); err != nil {
		t.Fatal(err)
	}
	p := b.ps.byName["a"]
	p.free[0] = p.free[0].addOne() // lose count of one address
	if invariantError(b) == nil {
		t.Fatal("corrupted counter not detected")
	}
}
