package ipam

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/btree"
)

// sharedRef is an entry of a pool's sharing index: an address held under
// some sharing key, in allocation order (family, range order, address).
type sharedRef struct {
	fam   Family
	order int
	addr  netip.Addr
}

func sharedLess(a, b sharedRef) bool {
	if a.fam != b.fam {
		return a.fam < b.fam
	}
	if a.order != b.order {
		return a.order < b.order
	}
	return a.addr.Less(b.addr)
}

// before reports whether an address at (order, addr) of a range comes
// before the free candidate (rs, free) in allocation order.
func before(order int, a netip.Addr, rs *rangeSet, free netip.Addr) bool {
	if rs == nil {
		return true
	}
	if order != rs.order {
		return order < rs.order
	}
	return a.Less(free)
}

// index adds a to the sharing index of its pool; only shareable keys are
// indexed. O(log k), k = addresses under the key.
func (st *addrState) index(a netip.Addr) {
	if st.rs == nil || st.key.Sharing == "" {
		return
	}
	p := st.rs.pool
	t := p.shared[st.key]
	if t == nil {
		t = btree.NewG(btreeDegree, sharedLess)
		p.shared[st.key] = t
	}
	t.ReplaceOrInsert(sharedRef{st.rs.fam, st.rs.order, a})
}

// unindex removes a from the sharing index, dropping empty trees so the
// map does not grow with keys nobody uses any more.
func (st *addrState) unindex(a netip.Addr) {
	if st.rs == nil || st.key.Sharing == "" {
		return
	}
	p := st.rs.pool
	t := p.shared[st.key]
	if t == nil {
		return
	}
	t.Delete(sharedRef{st.rs.fam, st.rs.order, a})
	if t.Len() == 0 {
		delete(p.shared, st.key)
	}
}

// holds reports whether svc is among the holders. O(log h).
func (st *addrState) holds(svc ServiceKey) bool {
	_, ok := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	return ok
}

// others returns the holders except svc.
func (st *addrState) others(svc ServiceKey) []ServiceKey {
	out := make([]ServiceKey, 0, len(st.holders))
	for _, h := range st.holders {
		if h != svc {
			out = append(out, h)
		}
	}
	return out
}

// shareProblem says why a Service with key and ports cannot join the
// current holders of st other than itself, or "" if it can. The rules
// (COMPAT "Sharing"): both sharing values non-empty and equal, backend
// keys equal, no (protocol, port) pair in common. All holders of an
// address carry the same key (st.key), so keys are compared once.
// O(h * p) for h holders with p ports each.
func (b *Book) shareProblem(st *addrState, svc ServiceKey, key SharingKey, ports []Port) (others []ServiceKey, why string) {
	others = st.others(svc)
	switch {
	case len(others) == 0:
		return nil, ""
	case key.Sharing == "":
		return others, "this service has no allow-shared-ip annotation"
	case st.key.Sharing == "":
		return others, "the holder has no allow-shared-ip annotation"
	case key.Sharing != st.key.Sharing:
		return others, fmt.Sprintf("allow-shared-ip %q differs from the holder's %q", key.Sharing, st.key.Sharing)
	case key.Backend != st.key.Backend:
		return others, "with externalTrafficPolicy Local, services sharing an address must select the same pods"
	}
	for _, o := range others {
		if p, ok := overlap(ports, b.svcs[o].req.Ports); ok {
			return others, "both use " + p.String()
		}
	}
	return others, ""
}

// overlap returns a port both sorted lists contain. O(p + q).
func overlap(a, b []Port) (Port, bool) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := a[i].compare(b[j]); {
		case c == 0:
			return a[i], true
		case c < 0:
			i++
		default:
			j++
		}
	}
	return Port{}, false
}

// lowestShared returns the first address of family f in p, in allocation
// order and before the free candidate (rs, free), that a Service with
// req's key and ports may join. Addresses the Service already holds are
// skipped: taking them again is the keep path's business.
// O(log k + m), m = entries visited before the answer.
func (b *Book) lowestShared(p *pool, f Family, req *Request, rs *rangeSet, free netip.Addr) (netip.Addr, bool) {
	if req.Sharing.Sharing == "" {
		return netip.Addr{}, false
	}
	t := p.shared[req.Sharing]
	if t == nil {
		return netip.Addr{}, false
	}
	var got netip.Addr
	t.AscendGreaterOrEqual(sharedRef{fam: f}, func(r sharedRef) bool {
		if r.fam != f || !before(r.order, r.addr, rs, free) {
			return false
		}
		st := b.addrs[r.addr]
		if st.holds(req.Service) {
			return true
		}
		if _, why := b.shareProblem(st, req.Service, req.Sharing, req.Ports); why == "" {
			got = r.addr
			return false
		}
		return true
	})
	return got, got.IsValid()
}

// lowest returns the address a new allocation of family f from p gets:
// the lowest of free and compatibly shared addresses. O(R + log n + m).
func (b *Book) lowest(p *pool, f Family, req *Request) (netip.Addr, bool) {
	rs, free, ok := p.lowestFree(f)
	if shared, sok := b.lowestShared(p, f, req, rs, free); sok {
		return shared, true
	}
	return free, ok
}
