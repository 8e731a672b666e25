package inspect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestPoolVerdicts checks what explain says about each pool, one reason a
// pool can turn a Service away per row.
func TestPoolVerdicts(t *testing.T) {
	pools := []v1beta1.IPAddressPool{
		pool("v4", []string{"198.51.100.0/31"}),
		pool("v6", []string{"2001:db8::/126"}),
		pool("manual", []string{"198.51.100.8/32"}, func(p *v1beta1.IPAddressPool) { p.Spec.AutoAssign = new(bool) }),
		pool("red-only", []string{"198.51.100.16/32"}, func(p *v1beta1.IPAddressPool) {
			p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{Namespaces: []string{"red"}}
		}),
		pool("web-only", []string{"198.51.100.24/32"}, func(p *v1beta1.IPAddressPool) {
			p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{
				ServiceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}}
		}),
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want map[string]string // pool -> verdict
	}{
		{"automatic", svc("auto"), map[string]string{
			"v4": VerdictChosen, "v6": VerdictRejected, "manual": VerdictRejected,
			"red-only": VerdictRejected, "web-only": VerdictRejected}},
		{"pinned to a pool", svc("pinned", annotate("metallb.io/address-pool", "manual")), map[string]string{
			"v4": VerdictRejected, "v6": VerdictRejected, "manual": VerdictChosen,
			"red-only": VerdictRejected, "web-only": VerdictRejected}},
		{"requested address held", svc("wants", annotate("metallb.io/loadBalancerIPs", "198.51.100.0")), map[string]string{
			"v4": VerdictNoRoom, "v6": VerdictRejected, "manual": VerdictRejected,
			"red-only": VerdictRejected, "web-only": VerdictRejected}},
	}
	cluster := assign.Cluster{Pools: pools}
	for _, tt := range tests {
		cluster.Services = append(cluster.Services, *tt.svc)
	}
	s, err := NewState(cluster, KeepAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := s.Explain(ipam.ServiceKey{Namespace: tt.svc.Namespace, Name: tt.svc.Name})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range e.Pools {
				got[p.Pool] = p.Verdict
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s\n%+v", diff, e.Pools)
			}
		})
	}
	why := map[string]string{}
	e, _ := s.Explain(ipam.ServiceKey{Namespace: "blue", Name: "auto"})
	for _, p := range e.Pools {
		why[p.Pool] = p.Why
	}
	for pool, want := range map[string]string{
		"v6":       "has no IPv4 addresses",
		"manual":   "autoAssign is false: ask for it with the metallb.io/address-pool annotation",
		"red-only": "serviceAllocation does not admit namespace blue",
		"web-only": "serviceAllocation.serviceSelectors do not match the Service's labels",
	} {
		if why[pool] != want {
			t.Errorf("pool %s: %q, want %q", pool, why[pool], want)
		}
	}
}

func pool(name string, addrs []string, edits ...func(*v1beta1.IPAddressPool)) v1beta1.IPAddressPool {
	p := v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metallb-system"},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
	for _, e := range edits {
		e(&p)
	}
	return p
}

func svc(name string, edits ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: name,
		CreationTimestamp: metav1.Unix(int64(len(name)), 0)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1",
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80}}}}
	for _, e := range edits {
		e(s)
	}
	return s
}

func annotate(k, v string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}
