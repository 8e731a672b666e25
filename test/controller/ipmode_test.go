package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

// ipModes reads the ipMode of every ingress entry of a Service; an entry
// without one reads "unset".
func ipModes(t *testing.T, ns, name string) []string {
	t.Helper()
	svc := &corev1.Service{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatalf("get service %s: %v", name, err)
	}
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		mode := "unset"
		if in.IPMode != nil {
			mode = string(*in.IPMode)
		}
		out = append(out, mode)
	}
	return out
}

func waitIPMode(t *testing.T, ns, name, want string) {
	t.Helper()
	fixture.WaitFor(t, name+" to show ipMode "+want, func() bool {
		modes := ipModes(t, ns, name)
		return len(modes) == 1 && modes[0] == want
	})
}

// TestIPMode covers status.loadBalancer.ingress[].ipMode: VIP by default,
// Proxy with the annotation, switched in place without moving the address;
// an invalid value is reported and changes nothing else; a restart writes
// nothing, Services without an ipMode in their status included.
func TestIPMode(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "ipmode", ns, "203.0.113.200/29")
	p := startController(t)

	fixture.Service(t, ns, "plain")
	fixture.Service(t, ns, "proxied", fixture.Annotate(assign.AnnotationIPMode, "Proxy"))
	fixture.Service(t, ns, "typo", fixture.Annotate(assign.AnnotationIPMode, "proxy"))
	got := waitSettled(t, ns, "plain", "proxied", "typo")
	checkOutcomes(t, got, []outcome{
		{"plain", "203.0.113.200", assign.ReasonAssigned, ""},
		{"proxied", "203.0.113.201", assign.ReasonAssigned, ""},
		{"typo", "", assign.ReasonInvalidRequest, assign.AnnotationIPMode},
	})
	waitIPMode(t, ns, "plain", "VIP")
	waitIPMode(t, ns, "proxied", "Proxy")
	waitEvent(t, ns, "typo", assign.EventAllocationFailed)

	// Switching modes rewrites the entry in place.
	changeService(t, ns, "plain", annotate(assign.AnnotationIPMode, "Proxy"))
	waitIPMode(t, ns, "plain", "Proxy")
	changeService(t, ns, "plain", annotate(assign.AnnotationIPMode, "VIP"))
	waitIPMode(t, ns, "plain", "VIP")

	// An invalid value on a Service that holds an address keeps both the
	// address and the mode, and says why.
	changeService(t, ns, "proxied", annotate(assign.AnnotationIPMode, "Bogus"))
	fixture.WaitFor(t, "proxied to report the invalid ipMode", func() bool {
		return observe(t, ns)["proxied"].reason == assign.ReasonInvalidRequest
	})
	got = observe(t, ns)
	if got["proxied"].ips != "203.0.113.201" {
		t.Errorf("proxied = %+v, want it to keep 203.0.113.201", got["proxied"])
	}
	waitIPMode(t, ns, "proxied", "Proxy")
	changeService(t, ns, "typo", annotate(assign.AnnotationIPMode, "Proxy"))
	waitIPMode(t, ns, "typo", "Proxy")

	// An address someone else gave without an ipMode (MetalLB writes none):
	// the API server fills in VIP, and the controller leaves an entry
	// without one alone too (ingress), so a restart takes it as it is.
	p.Kill()
	legacy := fixture.Service(t, ns, "legacy")
	legacy.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.206"}}
	if err := kube().Status().Update(ctx, legacy); err != nil {
		t.Fatalf("write legacy status: %v", err)
	}
	t.Logf("legacy ingress as the API server keeps it: ipMode %v", ipModes(t, ns, "legacy"))
	p = startController(t)
	before := waitSettled(t, ns, "plain", "proxied", "typo", "legacy")
	p.Kill()
	startController(t)
	checkKept(t, before, observe(t, ns))
	checkUnique(t, before)
}
