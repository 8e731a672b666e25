package config

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// L2Advertisement is a validated L2Advertisement. It is immutable.
type L2Advertisement struct {
	name             string
	pools            []string
	nodeSelectors    []labels.Selector
	interfaces       []string
	serviceSelectors []labels.Selector
	preferred        []PreferredNodeSelector
}

// PreferredNodeSelector adds Weight to the election score of every node
// Selector matches.
type PreferredNodeSelector struct {
	Weight   int32 // 1..100
	Selector labels.Selector
}

// Name is the advertisement's metadata.name.
func (a *L2Advertisement) Name() string { return a.name }

// Pools are the names of the pools it announces, sorted: those named in
// ipAddressPools and those ipAddressPoolSelectors match, or every pool when
// neither is set. A named pool that is not in the Config is not included.
func (a *L2Advertisement) Pools() []string { return slices.Clone(a.pools) }

// Covers reports whether the advertisement announces the named pool.
func (a *L2Advertisement) Covers(pool string) bool {
	_, found := slices.BinarySearch(a.pools, pool)
	return found
}

// NodeSelectors limit the nodes that may announce; empty means all.
func (a *L2Advertisement) NodeSelectors() []labels.Selector { return slices.Clone(a.nodeSelectors) }

// SelectsNode reports whether a node with these labels may announce.
func (a *L2Advertisement) SelectsNode(nodeLabels labels.Set) bool {
	return matchesAny(a.nodeSelectors, nodeLabels)
}

// Interfaces limit the interfaces that answer; empty means every suitable
// interface.
func (a *L2Advertisement) Interfaces() []string { return slices.Clone(a.interfaces) }

// ServiceSelectors limit the Services announced; empty means all.
func (a *L2Advertisement) ServiceSelectors() []labels.Selector {
	return slices.Clone(a.serviceSelectors)
}

// SelectsService reports whether a Service with these labels is announced.
func (a *L2Advertisement) SelectsService(serviceLabels labels.Set) bool {
	return matchesAny(a.serviceSelectors, serviceLabels)
}

// PreferredNodeSelectors weigh nodes in the election, in spec order.
func (a *L2Advertisement) PreferredNodeSelectors() []PreferredNodeSelector {
	return slices.Clone(a.preferred)
}

// NodeWeight is the sum of the weights of the preferred node selectors that
// match a node with these labels.
func (a *L2Advertisement) NodeWeight(nodeLabels labels.Set) int {
	total := 0
	for _, p := range a.preferred {
		if p.Selector.Matches(nodeLabels) {
			total += int(p.Weight)
		}
	}
	return total
}

// buildL2Advertisement validates one advertisement; nil when it has errors.
func buildL2Advertisement(rep *reporter, in *v1beta1.L2Advertisement, pools []*Pool) *L2Advertisement {
	s := &in.Spec
	a := &L2Advertisement{
		name:             in.Name,
		pools:            resolvePools(rep, s.IPAddressPools, s.IPAddressPoolSelectors, pools),
		nodeSelectors:    parseSelectors(rep, specPath.Child("nodeSelectors"), s.NodeSelectors),
		interfaces:       slices.Clone(s.Interfaces),
		serviceSelectors: parseSelectors(rep, specPath.Child("serviceSelectors"), s.ServiceSelectors),
		preferred:        preferredNodes(rep, s.PreferredNodeSelectors),
	}
	for i, name := range s.Interfaces {
		if name == "" {
			rep.add(specPath.Child("interfaces").Index(i), "must not be empty")
		}
	}
	if !rep.ok() {
		return nil
	}
	return a
}

func preferredNodes(rep *reporter, in []v1beta1.PreferredNodeSelector) []PreferredNodeSelector {
	var out []PreferredNodeSelector
	for i := range in {
		path := specPath.Child("preferredNodeSelectors").Index(i)
		if w := in[i].Weight; w < 1 || w > 100 {
			rep.add(path.Child("weight"), "%d is out of range 1-100", w)
		}
		sel, ok := parseSelector(rep, path.Child("preference"), &in[i].Preference)
		if ok {
			out = append(out, PreferredNodeSelector{Weight: in[i].Weight, Selector: sel})
		}
	}
	return out
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
