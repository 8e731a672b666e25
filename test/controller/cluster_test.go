package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/controller"
	"github.com/steadylb/steadylb/test/testenv"
)

var ctx = context.Background()

func kube() client.Client { return testenv.Shared.Client }

// newNamespace creates a namespace for one test's Services.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "svc-"}}
	if err := kube().Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// createPool creates a pool that serves only the Services of namespace ns,
// so that tests sharing the control plane never take each other's
// addresses.
func createPool(t *testing.T, name, ns string, addresses ...string) *v1beta1.IPAddressPool {
	t.Helper()
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses,
			ServiceAllocation: &v1beta1.ServiceAllocation{Namespaces: []string{ns}}}}
	if err := kube().Create(ctx, pool); err != nil {
		t.Fatalf("create pool %s: %v", name, err)
	}
	t.Cleanup(func() { _ = kube().Delete(ctx, pool) })
	return pool
}

type serviceOption func(*corev1.Service)

func annotate(k, v string) serviceOption {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

func createService(t *testing.T, ns, name string, opts ...serviceOption) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	for _, o := range opts {
		o(svc)
	}
	if err := kube().Create(ctx, svc); err != nil {
		t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	// envtest runs no namespace controller: delete Services one by one.
	t.Cleanup(func() { _ = kube().Delete(ctx, serviceRef(ns, name)) })
	return svc
}

// observed is a Service as the API server shows it.
type observed struct {
	ips             string // comma-separated ingress IPs
	pool            string
	reason          string // of the AddressAssigned condition
	message         string
	resourceVersion string
}

// observe lists the Services of a namespace from the API server.
func observe(t *testing.T, ns string) map[string]observed {
	t.Helper()
	var list corev1.ServiceList
	if err := kube().List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list services: %v", err)
	}
	out := map[string]observed{}
	for _, s := range list.Items {
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		o := observed{ips: strings.Join(ips, ","), pool: s.Annotations[controller.AnnotationAllocatedFromPool],
			resourceVersion: s.ResourceVersion}
		if c := meta.FindStatusCondition(s.Status.Conditions, controller.ConditionAddressAssigned); c != nil {
			o.reason, o.message = c.Reason, c.Message
		}
		out[s.Name] = o
	}
	return out
}

// waitFor polls until cond holds, failing the test after a generous
// deadline; it never sleeps for a fixed time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitSettled waits until every listed Service has a condition and, when it
// shows addresses, the pool annotation (written right after the status).
func waitSettled(t *testing.T, ns string, names ...string) map[string]observed {
	t.Helper()
	var got map[string]observed
	waitFor(t, fmt.Sprintf("services %v to be decided", names), func() bool {
		got = observe(t, ns)
		for _, n := range names {
			if o := got[n]; o.reason == "" || (o.ips == "") != (o.pool == "") {
				return false
			}
		}
		return true
	})
	return got
}

// checkUnique fails when an address is shown by two Services.
func checkUnique(t *testing.T, got map[string]observed) {
	t.Helper()
	holder := map[string]string{}
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if got[n].ips == "" {
			continue
		}
		for _, ip := range strings.Split(got[n].ips, ",") {
			if other, ok := holder[ip]; ok {
				t.Errorf("address %s held by both %s and %s", ip, other, n)
			}
			holder[ip] = n
		}
	}
}

// serviceRef is a Service object with only its name set, for deletes.
func serviceRef(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}
