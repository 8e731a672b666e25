package config

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// scope is what both kinds of advertisement select: which pools, from
// which nodes, for which Services. L2Advertisement and BGPAdvertisement
// embed it, so its methods are theirs.
type scope struct {
	pools            []string // sorted
	nodeSelectors    []labels.Selector
	serviceSelectors []labels.Selector
}

// buildScope validates the selecting fields of an advertisement's spec.
func buildScope(rep *reporter, poolNames []string, poolSelectors, nodeSelectors, serviceSelectors []metav1.LabelSelector, pools []*Pool) scope {
	return scope{
		pools:            resolvePools(rep, poolNames, poolSelectors, pools),
		nodeSelectors:    parseSelectors(rep, specPath.Child("nodeSelectors"), nodeSelectors),
		serviceSelectors: parseSelectors(rep, specPath.Child("serviceSelectors"), serviceSelectors),
	}
}

// Pools are the names of the pools it announces, sorted: those named in
// ipAddressPools and those ipAddressPoolSelectors match, or every pool when
// neither is set. A named pool that is not in the Config is not included.
func (s *scope) Pools() []string { return slices.Clone(s.pools) }

// Covers reports whether the advertisement announces the named pool.
func (s *scope) Covers(pool string) bool {
	_, found := slices.BinarySearch(s.pools, pool)
	return found
}

// NodeSelectors limit the nodes that announce; empty means all.
func (s *scope) NodeSelectors() []labels.Selector { return slices.Clone(s.nodeSelectors) }

// SelectsNode reports whether a node with these labels announces.
func (s *scope) SelectsNode(nodeLabels labels.Set) bool {
	return matchesAny(s.nodeSelectors, nodeLabels)
}

// ServiceSelectors limit the Services announced; empty means all.
func (s *scope) ServiceSelectors() []labels.Selector { return slices.Clone(s.serviceSelectors) }

// SelectsService reports whether a Service with these labels is announced.
func (s *scope) SelectsService(serviceLabels labels.Set) bool {
	return matchesAny(s.serviceSelectors, serviceLabels)
}

// resolvePools turns an advertisement's ipAddressPools and
// ipAddressPoolSelectors into the sorted names of the pools it covers, out
// of the valid pools (sorted by name). With neither set it covers them all.
// A name that matches no pool is not an error: MetalLB ignores it too, and
// the pool may be created later.
func resolvePools(rep *reporter, names []string, selectors []metav1.LabelSelector, pools []*Pool) []string {
	namesPath := specPath.Child("ipAddressPools")
	seen := map[string]int{}
	for i, n := range names {
		if j, dup := seen[n]; dup {
			rep.add(namesPath.Index(i), "duplicate of %s", namesPath.Index(j))
		}
		seen[n] = i
	}
	sels := parseSelectors(rep, specPath.Child("ipAddressPoolSelectors"), selectors)
	all := len(names) == 0 && len(selectors) == 0
	var out []string
	for _, p := range pools {
		_, named := seen[p.name]
		if all || named || slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(p.labels) }) {
			out = append(out, p.name)
		}
	}
	return out
}
