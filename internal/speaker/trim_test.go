package speaker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/internal/speaker/facts"
)

// TestTrimService: the cached Service keeps what the speaker reads and
// nothing else, and trimming twice changes nothing.
func TestTrimService(t *testing.T) {
	full := &corev1.Service{
		TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", ResourceVersion: "7", Generation: 2,
			Labels:        map[string]string{"app": "web"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}", "metallb.io/address-pool": "p"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("x"),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "web"},
			ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.1"}}},
			Conditions: []metav1.Condition{{Type: "x"}}},
	}
	want := &corev1.Service{
		TypeMeta: full.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("x"),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal},
		Status: corev1.ServiceStatus{LoadBalancer: full.Status.LoadBalancer},
	}
	got, err := trimService(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimService (-want +got):\n%s", diff)
	}
	again, _ := trimService(got)
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("trimService twice (-want +got):\n%s", diff)
	}
	if other, _ := trimService("not a service"); other != "not a service" {
		t.Errorf("trimService changed a value of another type")
	}
}

// TestTrimNodeKeepsFacts: a Node is usable or not alike before and after
// the cache trims it.
func TestTrimNodeKeepsFacts(t *testing.T) {
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
			if got := facts.NodeOf(tt.node).Usable(); got != tt.wantUsable {
				t.Errorf("usable = %v, want %v", got, tt.wantUsable)
			}
			// The cache's trim keeps what decides.
			trimmed, err := trimNode(tt.node.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if got := facts.NodeOf(trimmed.(*corev1.Node)).Usable(); got != tt.wantUsable {
				t.Errorf("usable after trimNode = %v, want %v", got, tt.wantUsable)
			}
		})
	}
}
