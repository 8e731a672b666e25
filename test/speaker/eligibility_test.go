package speaker

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// TestLocalPolicyFollowsEndpoints: under externalTrafficPolicy Local only
// a node with a serving endpoint answers, and the address follows the
// endpoint.
func TestLocalPolicyFollowsEndpoints(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.64/28"})
	const addr = "198.51.100.65"
	key := l.service("web", []string{addr}, []string{"b"}, localPolicy)
	l.waitAnswered(addr, "b")

	steps := []struct {
		name string
		eps  []endpoint
		want string
	}{
		{"the endpoint moves to c", ready(l.node("c")), "c"},
		{"two endpoints: the hash picks between them", ready(l.node("a"), l.node("c")), l.owner(addr, "a", "c")},
		{"not ready and not serving: nothing serves", []endpoint{{node: l.node("c")}}, ""},
		{"serving but not ready", []endpoint{{node: l.node("c"), serving: true}}, "c"},
		{"serving but terminating", []endpoint{{node: l.node("c"), serving: true, terminating: true}}, ""},
		{"ready again on b", ready(l.node("b")), "b"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			l.endpoints(key, st.eps...)
			l.waitAnswered(addr, st.want)
			if st.want == "" {
				l.waitStatusNodes(key)
			} else {
				l.waitStatusNodes(key, st.want)
			}
		})
	}
}

// TestNodeEligibility: each way of taking the elected node out moves the
// address to the next one in the hash order, and undoing it hands the
// address back.
func TestNodeEligibility(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.80/28"})
	const addr = "198.51.100.81"
	key := l.service("web", []string{addr}, nil)
	owner := l.owner(addr, "a", "b", "c")
	var others []string
	for _, n := range []string{"a", "b", "c"} {
		if n != owner {
			others = append(others, n)
		}
	}
	next := l.owner(addr, others...)
	l.waitAnswered(addr, owner)

	tests := []struct {
		name        string
		apply       func()
		undo        func()
		wantWhileOn string
	}{
		{"the exclude-from-external-load-balancers label",
			func() { l.labelNode(owner, corev1.LabelNodeExcludeBalancers, ptr.To("")) },
			func() { l.labelNode(owner, corev1.LabelNodeExcludeBalancers, nil) }, next},
		{"NetworkUnavailable",
			func() { l.networkUnavailable(owner, true) },
			func() { l.networkUnavailable(owner, false) }, next},
		// A node shut down without draining, its speaker still a member
		// (the membership has not noticed, or the speaker still runs).
		{"the out-of-service taint",
			func() {
				l.editNode(owner, func(n *corev1.Node) {
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
				})
			},
			func() { l.editNode(owner, func(n *corev1.Node) { n.Spec.Taints = nil }) }, next},
		{"node selectors that leave the node out",
			func() {
				l.editAdvertisement("lan", func(s *v1beta1.L2AdvertisementSpec) {
					s.NodeSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: metav1.LabelSelectorOpNotIn, Values: []string{l.node(owner)}}}}}
				})
			},
			func() { l.editAdvertisement("lan", func(s *v1beta1.L2AdvertisementSpec) { s.NodeSelectors = nil }) }, next},
		{"a preferred node selector for the last in the hash order",
			func() {
				last := others[0]
				if last == next {
					last = others[1]
				}
				l.editAdvertisement("lan", func(s *v1beta1.L2AdvertisementSpec) {
					s.PreferredNodeSelectors = []v1beta1.PreferredNodeSelector{{Weight: 50,
						Preference: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelHostname: l.node(last)}}}}
				})
			},
			func() {
				l.editAdvertisement("lan", func(s *v1beta1.L2AdvertisementSpec) { s.PreferredNodeSelectors = nil })
			},
			slices.DeleteFunc(slices.Clone(others), func(n string) bool { return n == next })[0]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.apply()
			l.waitAnswered(addr, tt.wantWhileOn)
			l.waitStatusNodes(key, tt.wantWhileOn)
			tt.undo()
			l.waitAnswered(addr, owner)
			l.waitStatusNodes(key, owner)
		})
	}
}

// TestServiceWithoutServingEndpointIsNotAnnounced: no EndpointSlice, or
// none that serves, means no announcement; the first serving endpoint
// brings it.
func TestServiceWithoutServingEndpointIsNotAnnounced(t *testing.T) {
	l := newLab(t, "a", "b")
	l.pool("lan", []string{"198.51.100.96/28"})
	const addr = "198.51.100.97"
	svc := l.service("web", []string{addr}, nil)
	l.endpoints(svc, endpoint{node: l.node("a")}) // not ready, not serving
	l.settle()
	if got := l.journal.answerers(mustAddr(addr)); len(got) != 0 {
		t.Fatalf("%s is answered by %v without a serving endpoint", addr, got)
	}
	if got := l.statusNodes(svc); len(got) != 0 {
		t.Fatalf("ServiceL2Status held by %v without a serving endpoint", got)
	}
	l.endpoints(svc, ready(l.node("a"))...)
	l.waitAnswered(addr, l.owner(addr, "a", "b"))
}
