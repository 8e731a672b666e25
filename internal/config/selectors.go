package config

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseSelectors converts a list of API label selectors. A selector that
// does not parse, or that repeats an earlier one (MetalLB rejects repeats),
// is reported and left out.
func parseSelectors(r *reporter, path *field.Path, in []metav1.LabelSelector) []labels.Selector {
	out := make([]labels.Selector, 0, len(in))
	seen := map[string]int{}
	for i := range in {
		sel, ok := parseSelector(r, path.Index(i), &in[i])
		if !ok {
			continue
		}
		key := sel.String()
		if j, dup := seen[key]; dup {
			r.add(path.Index(i), "duplicate of %s", path.Index(j))
			continue
		}
		seen[key] = i
		out = append(out, sel)
	}
	return out
}

func parseSelector(r *reporter, path *field.Path, in *metav1.LabelSelector) (labels.Selector, bool) {
	sel, err := metav1.LabelSelectorAsSelector(in)
	if err != nil {
		r.add(path, "invalid label selector: %v", err)
		return nil, false
	}
	return sel, true
}

// matchesAny reports whether set matches one of sels, an empty list
// matching everything: the meaning every "...Selectors" field of the API
// gives to an empty list.
func matchesAny(sels []labels.Selector, set labels.Set) bool {
	if len(sels) == 0 {
		return true
	}
	return slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(set) })
}

// mayOverlap reports whether one label set could match both selector lists
// (each an OR of selectors, empty meaning everything). Config has no nodes
// to test against, so it answers from the selectors alone and errs on the
// side of overlap: it says false only when every pair of selectors is
// provably disjoint, because both constrain one key in ways no value meets.
// MetalLB answers the same question with the nodes that exist at the time,
// which makes a configuration's validity change when a node is labelled.
func mayOverlap(a, b []labels.Selector) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if !disjoint(x, y) {
				return true
			}
		}
	}
	return false
}

func disjoint(x, y labels.Selector) bool {
	rx, _ := x.Requirements()
	ry, _ := y.Requirements()
	for i := range rx {
		for j := range ry {
			if rx[i].Key() == ry[j].Key() && contradicts(&rx[i], &ry[j]) {
				return true
			}
		}
	}
	return false
}

// contradicts reports whether no value of their common key meets both
// requirements.
func contradicts(p, q *labels.Requirement) bool {
	if (needsKey(p) && forbidsKey(q)) || (needsKey(q) && forbidsKey(p)) {
		return true
	}
	pv, pIn := allowedValues(p)
	qv, qIn := allowedValues(q)
	if pIn && qIn {
		return !slices.ContainsFunc(pv, func(v string) bool { return slices.Contains(qv, v) })
	}
	if pIn && isExclusion(q) {
		return subset(pv, q.ValuesUnsorted())
	}
	if qIn && isExclusion(p) {
		return subset(qv, p.ValuesUnsorted())
	}
	return false
}

func needsKey(r *labels.Requirement) bool {
	switch r.Operator() {
	case selection.Exists, selection.Equals, selection.DoubleEquals, selection.In, selection.GreaterThan, selection.LessThan:
		return true
	}
	return false
}

func forbidsKey(r *labels.Requirement) bool { return r.Operator() == selection.DoesNotExist }

// allowedValues returns the values r allows when it lists them.
func allowedValues(r *labels.Requirement) ([]string, bool) {
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In:
		return r.ValuesUnsorted(), true
	}
	return nil, false
}

func isExclusion(r *labels.Requirement) bool {
	return r.Operator() == selection.NotEquals || r.Operator() == selection.NotIn
}

func subset(small, big []string) bool {
	return !slices.ContainsFunc(small, func(v string) bool { return !slices.Contains(big, v) })
}
