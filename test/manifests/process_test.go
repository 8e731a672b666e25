package manifests

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// startController starts the controller binary with args plus a probe
// address of its own, and waits until it reports ready. With leader
// election a standby is ready too, so callers wait for the effects they
// need. The process is killed when the test ends.
func startController(t *testing.T, args ...string) *proc.Process {
	t.Helper()
	probe := proc.FreeAddr(t)
	p := proc.Start(t, binary, append(args, "--health-probe-bind-address", probe)...)
	if err := testenv.WaitReady(ctx, "http://"+probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("controller never became ready: %v", err)
	}
	return p
}

// newNamespace creates a namespace for one test's Services.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rbac-"}}
	if err := testenv.Shared.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// createPool creates a pool that serves only the Services of namespace ns.
func createPool(t *testing.T, name, ns string, addresses ...string) *v1beta1.IPAddressPool {
	t.Helper()
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses,
			ServiceAllocation: &v1beta1.ServiceAllocation{Namespaces: []string{ns}}}}
	if err := testenv.Shared.Client.Create(ctx, pool); err != nil {
		t.Fatalf("create pool %s: %v", name, err)
	}
	t.Cleanup(func() { _ = testenv.Shared.Client.Delete(ctx, pool) })
	return pool
}

// createService creates a Service of type LoadBalancer.
func createService(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	if err := testenv.Shared.Client.Create(ctx, svc); err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	// envtest runs no namespace controller: delete what the test made.
	t.Cleanup(func() { _ = testenv.Shared.Client.Delete(ctx, svc) })
	return svc
}

// hasEvent reports whether an event with reason is recorded about the
// object. Core and events.k8s.io events are one resource, so this sees
// events written through either API.
func hasEvent(c client.Client, ns, kind, name, reason string) bool {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}

func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}
