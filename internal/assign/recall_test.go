package assign

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/internal/ipam"
)

// TestDecideRecall: a Service that shows no address gets back what its
// allocation record names when that is free and allowed, and is served as
// if it had no record otherwise, with an event and a note in the message.
func TestDecideRecall(t *testing.T) {
	team := labels.Set{"team": "a"}
	svc := func(name string, record string, opts ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name,
			Annotations: map[string]string{AnnotationAllocation: record}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		for _, o := range opts {
			o(s)
		}
		return s
	}
	dual := func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}
	tests := []struct {
		name       string
		svc        *corev1.Service
		nsLabels   labels.Set
		wantAddrs  []string
		wantReason string
		wantEvent  bool   // EventRecordIgnored
		note       string // a part of an event's note
	}{
		{"free address comes back", svc("web", `{"ips":["192.0.2.2"]}`), team,
			[]string{"192.0.2.2"}, ReasonAssigned, false, "restored from " + AnnotationAllocation},
		{"taken address is ignored", svc("web", `{"ips":["192.0.2.0"]}`), team,
			[]string{"192.0.2.1"}, ReasonAssigned, true, "(RequestedIPInUse)"},
		{"address outside every pool is ignored", svc("web", `{"ips":["198.51.100.9"]}`), team,
			[]string{"192.0.2.1"}, ReasonAssigned, true, "(NoMatchingPool)"},
		{"pool no longer admits the service", svc("web", `{"ips":["192.0.2.2"]}`), nil,
			nil, ReasonNoMatchingPool, true, "not given back"},
		{"single stack takes its own family only", svc("web", `{"ips":["192.0.2.3","2001:db8::3"]}`), team,
			[]string{"192.0.2.3"}, ReasonAssigned, false, "restored"},
		{"dual stack record on a pool of one family", svc("web", `{"ips":["192.0.2.3","2001:db8::3"]}`, dual), team,
			[]string{"192.0.2.1"}, ReasonAssigned, true, "(NoMatchingPool)"},
		{"a malformed record is no record", svc("web", `{"ips":`), team,
			[]string{"192.0.2.1"}, ReasonAssigned, false, "Assigned IP [192.0.2.1]"},
		{"a requested IP wins over the record",
			svc("web", `{"ips":["192.0.2.2"]}`, func(s *corev1.Service) { s.Spec.LoadBalancerIP = "192.0.2.3" }), team,
			[]string{"192.0.2.3"}, ReasonAssigned, false, "Assigned IP [192.0.2.3]"},
		{"a Service that shows an address keeps it",
			svc("web", `{"ips":["192.0.2.2"]}`, func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.3"}}
			}), team,
			[]string{"192.0.2.3"}, ReasonAssigned, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alloc := newTestAllocator(t)
			holder := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "holder"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
			holder.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.0"}}
			claims := []ipam.Claim{alloc.Claim(holder, team)}
			if len(tt.svc.Status.LoadBalancer.Ingress) > 0 {
				claims = append(claims, alloc.Claim(tt.svc, team))
			}
			if conflicts := alloc.book.Restore(claims); len(conflicts) > 0 {
				t.Fatalf("restore: %v", conflicts)
			}
			d := alloc.Decide(tt.svc, tt.nsLabels)
			var addrs []string
			for _, a := range d.Addrs {
				addrs = append(addrs, a.String())
			}
			ignored := slices.ContainsFunc(d.Events, func(n Event) bool { return n.Reason == EventRecordIgnored })
			noted := tt.note == "" || slices.ContainsFunc(d.Events, func(n Event) bool { return strings.Contains(n.Note, tt.note) })
			if !slices.Equal(addrs, tt.wantAddrs) || d.Condition.Reason != tt.wantReason || ignored != tt.wantEvent || !noted {
				t.Errorf("decided %v, %s, record ignored %v, events %+v\nwant %v, %s, record ignored %v, an event saying %q",
					addrs, d.Condition.Reason, ignored, d.Events, tt.wantAddrs, tt.wantReason, tt.wantEvent, tt.note)
			}
			if held, _ := alloc.book.Assigned(Key(tt.svc)); !slices.Equal(held.Addrs, d.Addrs) {
				t.Errorf("the book holds %v, the decision says %v", held.Addrs, d.Addrs)
			}
		})
	}
}
