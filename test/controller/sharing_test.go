package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

func withPort(port int32) fixture.ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
	}
}

func withSpecIP(ip string) fixture.ServiceOption {
	return func(s *corev1.Service) { s.Spec.LoadBalancerIP = ip }
}

// TestSharingAndRequests covers address sharing and the remaining ways to
// ask for an address, good and bad, side by side: the bad requests are
// told why and take nothing from the good ones.
func TestSharingAndRequests(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "sharing", ns, "203.0.113.48/29")
	startController(t)
	shared := fixture.Annotate("metallb.io/allow-shared-ip", "web")
	fixture.Service(t, ns, "web-http", shared, withPort(80), fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.50"))
	fixture.Service(t, ns, "web-https", shared, withPort(443), fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.50"))
	fixture.Service(t, ns, "web-clash", shared, withPort(443), fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.50"))
	fixture.Service(t, ns, "other-key", fixture.Annotate("metallb.io/allow-shared-ip", "db"), withPort(5432),
		fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.50"))
	fixture.Service(t, ns, "spec-ip", withSpecIP("203.0.113.53"))
	fixture.Service(t, ns, "both", withSpecIP("203.0.113.54"), fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.54"))
	fixture.Service(t, ns, "two-v4", fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.55,203.0.113.56"))

	names := []string{"web-http", "web-https", "web-clash", "other-key", "spec-ip", "both", "two-v4"}
	got := waitSettled(t, ns, names...)
	checkOutcomes(t, got, []outcome{
		{"web-http", "203.0.113.50", assign.ReasonAssigned, ""},
		{"web-https", "203.0.113.50", assign.ReasonAssigned, ""},
		{"web-clash", "", assign.ReasonRequestedIPInUse, "203.0.113.50"},
		{"other-key", "", assign.ReasonRequestedIPInUse, "203.0.113.50"},
		{"spec-ip", "203.0.113.53", assign.ReasonAssigned, ""},
		{"both", "", assign.ReasonInvalidRequest, "both the loadBalancerIPs annotation and spec.loadBalancerIP"},
		{"two-v4", "", assign.ReasonInvalidRequest, "two addresses of one family"},
	})
	waitEvent(t, ns, "web-clash", assign.EventAllocationFailed)
}
