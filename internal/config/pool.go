package config

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// Pool is a validated IPAddressPool. It is immutable: accessors return
// copies.
//
// The ranges of all Pools in one Config are disjoint, within a pool and
// between pools, so an address belongs to at most one Pool.
type Pool struct {
	name          string
	ranges        []AddressRange
	autoAssign    bool
	avoidBuggyIPs bool
	allocation    *ServiceAllocation
	labels        labels.Set
}

// Name is the pool's metadata.name.
func (p *Pool) Name() string { return p.name }

// Ranges are the pool's address entries in spec order, the order automatic
// allocation walks them in.
func (p *Pool) Ranges() []AddressRange { return slices.Clone(p.ranges) }

// AutoAssign reports whether automatic allocation may use the pool (default
// true). Explicit requests ignore it.
func (p *Pool) AutoAssign() bool { return p.autoAssign }

// AvoidBuggyIPs reports whether IPv4 addresses ending in .0 and .255 must be
// skipped.
func (p *Pool) AvoidBuggyIPs() bool { return p.avoidBuggyIPs }

// ServiceAllocation is the pool's spec.serviceAllocation, nil when unset.
func (p *Pool) ServiceAllocation() *ServiceAllocation { return p.allocation }

// Labels are the pool's metadata.labels, which advertisements' pool
// selectors match.
func (p *Pool) Labels() labels.Set { return maps.Clone(p.labels) }

// Contains reports whether addr is one of the pool's addresses. An
// IPv4-mapped IPv6 address is not: pass IPv4 addresses unmapped.
func (p *Pool) Contains(addr netip.Addr) bool {
	return slices.ContainsFunc(p.ranges, func(r AddressRange) bool { return r.Range.Contains(addr) })
}

// HasIPv4 reports whether the pool holds IPv4 addresses.
func (p *Pool) HasIPv4() bool {
	return slices.ContainsFunc(p.ranges, AddressRange.Is4)
}

// HasIPv6 reports whether the pool holds IPv6 addresses.
func (p *Pool) HasIPv6() bool {
	return slices.ContainsFunc(p.ranges, func(r AddressRange) bool { return !r.Is4() })
}

// Admits reports whether the pool's serviceAllocation lets a Service in the
// given namespace, with the given labels, take an address from it (the first
// step of automatic allocation, as in MetalLB). It ignores autoAssign, which only
// automatic allocation consults.
//
// A pool without serviceAllocation admits every Service, and so does one
// whose serviceAllocation sets only a priority. Otherwise the namespace must
// be listed in namespaces or its labels match a namespaceSelector (when
// either is set), and the Service's labels must match a serviceSelector
// (when any is set).
func (p *Pool) Admits(namespace string, namespaceLabels, serviceLabels labels.Set) bool {
	a := p.allocation
	if a == nil {
		return true
	}
	return a.admitsNamespace(namespace, namespaceLabels) && matchesAny(a.serviceSelectors, serviceLabels)
}

// AdmitsNamespace is the namespace half of Admits: whether the pool's
// namespaces and namespaceSelectors let a Service of this namespace in.
func (p *Pool) AdmitsNamespace(namespace string, namespaceLabels labels.Set) bool {
	return p.allocation == nil || p.allocation.admitsNamespace(namespace, namespaceLabels)
}

// AdmitsService is the other half of Admits: whether the pool's
// serviceSelectors match a Service with these labels.
func (p *Pool) AdmitsService(serviceLabels labels.Set) bool {
	return p.allocation == nil || matchesAny(p.allocation.serviceSelectors, serviceLabels)
}

// ServiceAllocation restricts a Pool to some Services and ranks it for
// automatic allocation. It is immutable.
type ServiceAllocation struct {
	priority           int
	namespaces         []string // sorted, unique
	namespaceSelectors []labels.Selector
	serviceSelectors   []labels.Selector
}

// Priority orders pools for automatic allocation: lower first, 0 (unset)
// after every positive priority.
func (a *ServiceAllocation) Priority() int { return a.priority }

// Namespaces are the namespaces listed by name, sorted.
func (a *ServiceAllocation) Namespaces() []string { return slices.Clone(a.namespaces) }

// NamespaceSelectors select namespaces by label.
func (a *ServiceAllocation) NamespaceSelectors() []labels.Selector {
	return slices.Clone(a.namespaceSelectors)
}

// ServiceSelectors select Services by label.
func (a *ServiceAllocation) ServiceSelectors() []labels.Selector {
	return slices.Clone(a.serviceSelectors)
}

func (a *ServiceAllocation) admitsNamespace(namespace string, namespaceLabels labels.Set) bool {
	if len(a.namespaces) == 0 && len(a.namespaceSelectors) == 0 {
		return true
	}
	if _, found := slices.BinarySearch(a.namespaces, namespace); found {
		return true
	}
	return slices.ContainsFunc(a.namespaceSelectors, func(s labels.Selector) bool { return s.Matches(namespaceLabels) })
}

// poolDraft is a pool being validated. Its entries are kept even when the
// pool is invalid, so that a broken older pool still keeps a newer one from
// taking its addresses: when the older pool is fixed, the newer one would
// otherwise be the one to lose them, with every Service that holds them.
type poolDraft struct {
	pool    *Pool
	rep     *reporter
	age     int     // position in age order: lower is older
	entries []entry // parsed entries of spec.addresses
}

// entry is one parsed element of spec.addresses.
type entry struct {
	index int    // position in spec.addresses
	text  string // as written
	r     AddressRange
}

var addressesPath = field.NewPath("spec", "addresses")

// draftPools parses every pool on its own. pools are in age order.
func draftPools(c *collector, pools []*v1beta1.IPAddressPool) []*poolDraft {
	drafts := make([]*poolDraft, len(pools))
	for i, in := range pools {
		drafts[i] = draftPool(c.object(KindIPAddressPool, in.Name), in)
		drafts[i].age = i
	}
	return drafts
}

func draftPool(rep *reporter, in *v1beta1.IPAddressPool) *poolDraft {
	d := &poolDraft{rep: rep, pool: &Pool{
		name:          in.Name,
		autoAssign:    in.Spec.AutoAssign == nil || *in.Spec.AutoAssign,
		avoidBuggyIPs: in.Spec.AvoidBuggyIPs,
		labels:        maps.Clone(labels.Set(in.Labels)),
	}}
	if len(in.Spec.Addresses) == 0 {
		rep.add(addressesPath, "must list at least one CIDR or range")
	}
	for i, text := range in.Spec.Addresses {
		r, err := ParseRange(text)
		if err != nil {
			rep.add(addressesPath.Index(i), "%v", err)
			continue
		}
		d.entries = append(d.entries, entry{index: i, text: text, r: r})
		d.pool.ranges = append(d.pool.ranges, r)
	}
	if in.Spec.ServiceAllocation != nil {
		d.pool.allocation = buildServiceAllocation(rep, in.Spec.ServiceAllocation)
	}
	return d
}

func buildServiceAllocation(rep *reporter, in *v1beta1.ServiceAllocation) *ServiceAllocation {
	path := field.NewPath("spec", "serviceAllocation")
	a := &ServiceAllocation{priority: in.Priority}
	seen := map[string]int{}
	for i, ns := range in.Namespaces {
		if j, dup := seen[ns]; dup {
			rep.add(path.Child("namespaces").Index(i), "duplicate of %s", path.Child("namespaces").Index(j))
			continue
		}
		seen[ns] = i
		a.namespaces = append(a.namespaces, ns)
	}
	slices.Sort(a.namespaces)
	a.namespaceSelectors = parseSelectors(rep, path.Child("namespaceSelectors"), in.NamespaceSelectors)
	a.serviceSelectors = parseSelectors(rep, path.Child("serviceSelectors"), in.ServiceSelectors)
	return a
}

// placedEntry is an entry with the pool it belongs to.
type placedEntry struct {
	entry
	pool *poolDraft
}

// checkOverlaps reports every pair of entries that share an address. Within
// one pool the later entry is at fault; between pools the newer pool is, so
// that creating a pool can never take addresses away from an existing one.
func checkOverlaps(drafts []*poolDraft) {
	var all []placedEntry
	for _, d := range drafts {
		for _, e := range d.entries {
			all = append(all, placedEntry{entry: e, pool: d})
		}
	}
	slices.SortFunc(all, func(a, b placedEntry) int {
		return cmp.Or(a.r.Range.From().Compare(b.r.Range.From()), a.r.Range.To().Compare(b.r.Range.To()),
			cmp.Compare(a.pool.age, b.pool.age), cmp.Compare(a.index, b.index))
	})
	// Sorted by start, each entry can only overlap the entries after it that
	// start before it ends.
	for i := range all {
		for j := i + 1; j < len(all) && all[j].r.Range.From().Compare(all[i].r.Range.To()) <= 0; j++ {
			reportOverlap(all[i], all[j])
		}
	}
}

func reportOverlap(a, b placedEntry) {
	if a.pool == b.pool {
		first, later := a, b
		if later.index < first.index {
			first, later = later, first
		}
		later.pool.rep.add(addressesPath.Index(later.index), "%q overlaps %q (%s)",
			later.text, first.text, addressesPath.Index(first.index))
		return
	}
	older, newer := a, b
	if newer.pool.age < older.pool.age {
		older, newer = newer, older
	}
	newer.pool.rep.add(addressesPath.Index(newer.index), "%q overlaps %q of IPAddressPool %q",
		newer.text, older.text, older.pool.pool.name)
}
