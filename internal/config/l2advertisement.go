package config

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// L2Advertisement is a validated L2Advertisement. It is immutable.
type L2Advertisement struct {
	scope
	name       string
	interfaces []string
	preferred  []PreferredNodeSelector
}

// PreferredNodeSelector adds Weight to the election score of every node
// Selector matches.
type PreferredNodeSelector struct {
	Weight   int32 // 1..100
	Selector labels.Selector
}

// Name is the advertisement's metadata.name.
func (a *L2Advertisement) Name() string { return a.name }

// Interfaces limit the interfaces that answer; empty means every suitable
// interface.
func (a *L2Advertisement) Interfaces() []string { return slices.Clone(a.interfaces) }

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
		scope:      buildScope(rep, s.IPAddressPools, s.IPAddressPoolSelectors, s.NodeSelectors, s.ServiceSelectors, pools),
		name:       in.Name,
		interfaces: slices.Clone(s.Interfaces),
		preferred:  preferredNodes(rep, s.PreferredNodeSelectors),
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
