package speaker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestCanServe(t *testing.T) {
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name string
		c    discoveryv1.EndpointConditions
		want bool
	}{
		{"no conditions means ready", discoveryv1.EndpointConditions{}, true},
		{"ready", discoveryv1.EndpointConditions{Ready: yes}, true},
		{"not ready", discoveryv1.EndpointConditions{Ready: no}, false},
		{"not ready but serving", discoveryv1.EndpointConditions{Ready: no, Serving: yes}, true},
		{"serving and terminating", discoveryv1.EndpointConditions{Ready: no, Serving: yes, Terminating: yes}, false},
		{"terminating without other conditions", discoveryv1.EndpointConditions{Terminating: yes}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := canServe(tt.c); got != tt.want {
				t.Errorf("canServe(%+v) = %v, want %v", tt.c, got, tt.want)
			}
		})
	}
}

func TestEndpointFactsOf(t *testing.T) {
	ep := func(node string, ready bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{"203.0.113.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
		if node != "" {
			e.NodeName = ptr.To(node)
		}
		return e
	}
	slice := func(kind discoveryv1.AddressType, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{AddressType: kind, Endpoints: eps}
	}
	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   endpointFacts
	}{
		{"no slices", nil, endpointFacts{nodes: map[string]bool{}}},
		{"ready endpoints over two slices", []discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeIPv4, ep("a", true), ep("b", false)),
			slice(discoveryv1.AddressTypeIPv6, ep("c", true)),
		}, endpointFacts{serving: true, nodes: map[string]bool{"a": true, "c": true}}},
		{"an endpoint without a node serves but places nothing", []discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeIPv4, ep("", true)),
		}, endpointFacts{serving: true, nodes: map[string]bool{}, unplaced: 1}},
		{"FQDN slices do not count", []discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeFQDN, ep("a", true)),
		}, endpointFacts{nodes: map[string]bool{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, endpointFactsOf(tt.slices), cmp.AllowUnexported(endpointFacts{})); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeFactsOf(t *testing.T) {
	node := func(labels map[string]string, conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Status: corev1.NodeStatus{Conditions: conds}}
	}
	tainted := func(taints ...corev1.Taint) *corev1.Node {
		n := node(nil)
		n.Spec.Taints = taints
		return n
	}
	tests := []struct {
		name       string
		node       *corev1.Node
		wantUsable bool
	}{
		{"no labels, no conditions", node(nil), true},
		{"network available", node(nil, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse}), true},
		{"network unavailable", node(nil, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue}), false},
		{"excluded, empty value", node(map[string]string{corev1.LabelNodeExcludeBalancers: ""}), false},
		{"excluded", node(map[string]string{corev1.LabelNodeExcludeBalancers: "true"}), false},
		{"out of service", tainted(corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}), false},
		{"out of service, NoSchedule", tainted(corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoSchedule}), false},
		{"another taint", tainted(corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeFactsOf(tt.node).usable(); got != tt.wantUsable {
				t.Errorf("usable = %v, want %v", got, tt.wantUsable)
			}
			// The cache's trim keeps what decides.
			trimmed, err := trimNode(tt.node.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeFactsOf(trimmed.(*corev1.Node)).usable(); got != tt.wantUsable {
				t.Errorf("usable after trimNode = %v, want %v", got, tt.wantUsable)
			}
		})
	}
}
