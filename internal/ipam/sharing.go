package ipam

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

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

// shareGroup holds the shared addresses of one pool whose holders carry
// one sharing key and, together, use exactly one set of ports. A Service
// may join any address of a group whose ports it does not use, so finding
// the lowest address it may share costs one tree minimum per group instead
// of a walk over every holder of the key. Groups are few in practice:
// Services that share addresses tend to come in a handful of port shapes.
type shareGroup struct {
	key   SharingKey
	sig   string // canonical form of ports, the group's identity under key
	ports []Port // sorted
	addrs *btree.BTreeG[sharedRef]
}

// shareIndex is a pool's sharing index: per key, its groups sorted by sig.
type shareIndex map[SharingKey][]*shareGroup

func (ix shareIndex) group(key SharingKey, ports []Port) *shareGroup {
	sig := portSig(ports)
	groups := ix[key]
	i, found := slices.BinarySearchFunc(groups, sig, func(g *shareGroup, s string) int { return strings.Compare(g.sig, s) })
	if found {
		return groups[i]
	}
	g := &shareGroup{key: key, sig: sig, ports: ports, addrs: btree.NewG(btreeDegree, sharedLess)}
	ix[key] = slices.Insert(groups, i, g)
	return g
}

// drop removes an empty group, so keys and port shapes nobody uses any
// more do not accumulate.
func (ix shareIndex) drop(g *shareGroup) {
	groups := ix[g.key]
	if i := slices.Index(groups, g); i >= 0 {
		groups = slices.Delete(groups, i, i+1)
	}
	if len(groups) == 0 {
		delete(ix, g.key)
		return
	}
	ix[g.key] = groups
}

// entries counts the indexed addresses (for the invariant checker).
func (ix shareIndex) entries() int {
	n := 0
	for _, groups := range ix {
		for _, g := range groups {
			n += g.addrs.Len()
		}
	}
	return n
}

func portSig(ports []Port) string {
	var sb strings.Builder
	for _, p := range ports {
		sb.WriteString(p.Protocol)
		sb.WriteByte('/')
		fmt.Fprint(&sb, p.Port)
		sb.WriteByte(',')
	}
	return sb.String()
}

// reindex files a in the sharing index as its current state says: under
// its key and its holders' ports while it is shareable, nowhere while it
// has no key, no holder, or a holder that is giving it up (nobody may join
// an address whose release the API server has not confirmed). O(log k +
// h p) for k addresses in the group, h holders with p ports.
func (b *Book) reindex(a netip.Addr, st *addrState) {
	if g := st.group; g != nil {
		g.addrs.Delete(sharedRef{st.rs.fam, st.rs.order, a})
		if g.addrs.Len() == 0 {
			st.rs.pool.shared.drop(g)
		}
		st.group = nil
	}
	if st.rs == nil || st.key.Sharing == "" || len(st.holders) == 0 || len(st.leaving) > 0 {
		return
	}
	g := st.rs.pool.shared.group(st.key, b.portsOf(st.holders))
	g.addrs.ReplaceOrInsert(sharedRef{st.rs.fam, st.rs.order, a})
	st.group = g
}

// portsOf is the sorted union of the ports of the given holders.
func (b *Book) portsOf(holders []ServiceKey) []Port {
	if len(holders) == 1 {
		return b.svcs[holders[0]].req.Ports
	}
	var out []Port
	for _, k := range holders {
		out = append(out, b.svcs[k].req.Ports...)
	}
	slices.SortFunc(out, Port.compare)
	return slices.Compact(out)
}

// holds reports whether svc is among the holders. O(log h).
func (st *addrState) holds(svc ServiceKey) bool {
	_, ok := slices.BinarySearchFunc(st.holders, svc, ServiceKey.compare)
	return ok
}

// others returns the holders, and the Services giving the address up,
// except svc.
func (st *addrState) others(svc ServiceKey) []ServiceKey {
	out := make([]ServiceKey, 0, len(st.holders)+len(st.leaving))
	for _, h := range st.holders {
		if h != svc {
			out = append(out, h)
		}
	}
	for _, h := range st.leaving {
		if h != svc && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, ServiceKey.compare)
	return out
}

// leavingOthers reports whether a Service other than svc is giving st up.
func (st *addrState) leavingOthers(svc ServiceKey) bool {
	for _, h := range st.leaving {
		if h != svc {
			return true
		}
	}
	return false
}

// shareProblem says why a Service with key and ports cannot join the
// current holders of st other than itself, or "" if it can. The rules
// (MetalLB's sharing rule): both sharing values non-empty and equal, backend
// keys equal, no (protocol, port) pair in common. All holders of an
// address carry the same key (st.key), so keys are compared once. An
// address another Service is giving up takes nobody until the API server
// has confirmed the release. O(h * p) for h holders with p ports each;
// no allocation unless there is a problem.
func (b *Book) shareProblem(st *addrState, svc ServiceKey, key SharingKey, ports []Port) string {
	if st.leavingOthers(svc) {
		return "the address is being released and the API server has not confirmed it yet"
	}
	alone := len(st.holders) == 0 || (len(st.holders) == 1 && st.holders[0] == svc)
	switch {
	case alone:
		return ""
	case key.Sharing == "":
		return "this service has no allow-shared-ip annotation"
	case st.key.Sharing == "":
		return "the holder has no allow-shared-ip annotation"
	case key.Sharing != st.key.Sharing:
		return fmt.Sprintf("allow-shared-ip %q differs from the holder's %q", key.Sharing, st.key.Sharing)
	case key.Backend != st.key.Backend:
		return "with externalTrafficPolicy Local, services sharing an address must select the same pods"
	}
	for _, o := range st.holders {
		if o == svc {
			continue
		}
		if p, ok := overlap(ports, b.svcs[o].req.Ports); ok {
			return "both use " + p.String()
		}
	}
	return ""
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
// O(G (p + log k)) for G port groups under the key: independent of the
// number of holders whose ports clash.
func (b *Book) lowestShared(p *pool, f Family, req *Request, rs *rangeSet, free netip.Addr) (netip.Addr, bool) {
	if req.Sharing.Sharing == "" {
		return netip.Addr{}, false
	}
	var best sharedRef
	found := false
	for _, g := range p.shared[req.Sharing] {
		if _, clash := overlap(req.Ports, g.ports); clash {
			continue
		}
		g.addrs.AscendGreaterOrEqual(sharedRef{fam: f}, func(r sharedRef) bool {
			if r.fam != f || !before(r.order, r.addr, rs, free) || (found && !sharedLess(r, best)) {
				return false
			}
			if b.addrs[r.addr].holds(req.Service) {
				return true // at most two of these: the Service's own addresses
			}
			best, found = r, true
			return false
		})
	}
	return best.addr, found
}

// lowest returns the address a new allocation of family f from p gets:
// the lowest of free and compatibly shared addresses. O(R + log n + G log k).
func (b *Book) lowest(p *pool, f Family, req *Request) (netip.Addr, bool) {
	rs, free, ok := p.lowestFree(f)
	if shared, sok := b.lowestShared(p, f, req, rs, free); sok {
		return shared, true
	}
	return free, ok
}
