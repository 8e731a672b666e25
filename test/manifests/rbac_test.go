package manifests

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

var ctx = context.Background()

// rbacKinds are the objects that make up the controller's identity and
// permissions; the tests apply them for real.
var rbacKinds = []string{"ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}

// controllerUser is the user the Deployment's Pods act as: the
// ServiceAccount the Deployment names, so a Deployment and bindings that
// disagree fail the tests.
func controllerUser(t *testing.T, r rendered) string {
	t.Helper()
	d := r.deployment(t)
	return fmt.Sprintf("system:serviceaccount:%s:%s", d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
}

// applyRBAC applies the rendered ServiceAccount, roles and bindings and
// waits until the authorizer, which learns of them through a watch,
// honours both bindings.
func applyRBAC(t *testing.T, r rendered, c client.Client) {
	t.Helper()
	var objects []any
	for _, o := range r.ofKind(rbacKinds...) {
		objects = append(objects, o.Object)
	}
	if _, err := kubectl(asList(t, objects...), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the RBAC bindings to take effect", func() bool {
		cluster := c.List(ctx, &corev1.ServiceList{}, client.Limit(1))
		namespaced := c.List(ctx, &v1beta1.IPAddressPoolList{}, client.InNamespace(testenv.Namespace), client.Limit(1))
		return cluster == nil && namespaced == nil
	})
}

// impersonating returns a rest config and a kubeconfig file for the
// control plane that act as user. The admin identity of the test may
// impersonate anyone; every request is then authorized as user.
func impersonating(t *testing.T, user string) (*rest.Config, string) {
	t.Helper()
	cfg := rest.CopyConfig(testenv.Shared.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}

	kc, err := clientcmd.LoadFromFile(testenv.Shared.Kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	for _, auth := range kc.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("write impersonating kubeconfig: %v", err)
	}
	return cfg, path
}

// impersonatingWatcher is impersonatingClient that can also watch.
func impersonatingWatcher(t *testing.T, cfg *rest.Config) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Shared.Scheme})
	if err != nil {
		t.Fatalf("create impersonating client: %v", err)
	}
	return c
}

func impersonatingClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Shared.Scheme})
	if err != nil {
		t.Fatalf("create impersonating client: %v", err)
	}
	return c
}

// TestRBACIsEnforced asks the API server, as the controller's identity,
// for things the roles grant and things they must not. Writes are dry
// runs: authorization is decided all the same, and a broken setup cannot
// damage the control plane. The allowed rows show the identity is bound;
// the forbidden rows show RBAC, not an admin, answers for it.
func TestRBACIsEnforced(t *testing.T) {
	r := renderDefault(t)
	cfg, _ := impersonating(t, controllerUser(t, r))
	c := impersonatingClient(t, cfg)
	applyRBAC(t, r, c)

	dry := client.DryRunAll
	state := func(ns string) *v1beta1.ConfigurationState {
		return &v1beta1.ConfigurationState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rbac-probe"}}
	}
	tests := []permission{
		{"list Services in every namespace", func() error {
			return c.List(ctx, &corev1.ServiceList{})
		}, false},
		{"list Namespaces", func() error {
			return c.List(ctx, &corev1.NamespaceList{})
		}, false},
		{"list ConfigurationStates in its namespace", func() error {
			return c.List(ctx, &v1beta1.ConfigurationStateList{}, client.InNamespace(testenv.Namespace))
		}, false},
		{"create a ConfigurationState in its namespace", func() error {
			return c.Create(ctx, state(testenv.Namespace), dry)
		}, false},
		{"read the leader election Lease", func() error {
			err := c.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "no-such-lease"}, &coordinationv1.Lease{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}, false},

		{"get and update the memberlist Secret", func() error {
			var s corev1.Secret
			err := c.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "memberlist"}, &s)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return c.Update(ctx, &s, dry)
		}, false},
		{"create a Secret in its namespace", func() error {
			return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, GenerateName: "rbac-probe-"}}, dry)
		}, false},

		{"list Secrets in every namespace", func() error {
			return c.List(ctx, &corev1.SecretList{})
		}, true},
		{"list Secrets in its namespace", func() error {
			return c.List(ctx, &corev1.SecretList{}, client.InNamespace(testenv.Namespace))
		}, true},
		{"get another Secret in its namespace", func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "not-memberlist"}, &corev1.Secret{})
		}, true},
		{"update another Secret in its namespace", func() error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "not-memberlist", ResourceVersion: "1"}}
			return c.Update(ctx, s, dry)
		}, true},
		{"delete a Service", func() error {
			return c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}}, client.DryRunAll)
		}, true},
		{"list ConfigurationStates in every namespace", func() error {
			return c.List(ctx, &v1beta1.ConfigurationStateList{})
		}, true},
		{"create a ConfigurationState in another namespace", func() error {
			return c.Create(ctx, state("default"), dry)
		}, true},
		{"create an IPAddressPool", func() error {
			pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "rbac-probe"},
				Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"192.0.2.0/28"}}}
			return c.Create(ctx, pool, dry)
		}, true},
		{"list IPAddressPools in another namespace", func() error {
			return c.List(ctx, &v1beta1.IPAddressPoolList{}, client.InNamespace("default"))
		}, true},
		{"take a Lease in another namespace", func() error {
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "rbac-probe"}}
			return c.Create(ctx, lease, dry)
		}, true},
	}
	checkPermissions(t, tests)
}

// TestControllerWorksWithItsRBAC runs the controller binary with the
// Deployment's arguments as the manifests' ServiceAccount and takes one
// Service through every kind of request the controller makes.
func TestControllerWorksWithItsRBAC(t *testing.T) {
	r := renderDefault(t)
	cfg, kubeconfig := impersonating(t, controllerUser(t, r))
	applyRBAC(t, r, impersonatingClient(t, cfg))
	admin := testenv.Shared.Client

	const leaseName = "rbac-test"
	args := append(r.deployment(t).Spec.Template.Spec.Containers[0].Args,
		"--kubeconfig", kubeconfig, "--namespace", testenv.Namespace,
		"--leader-elect", "--leader-election-id", leaseName, "--metrics-bind-address", "0")
	// The pool first: without one the controller waits, unready.
	ns := fixture.Namespace(t)
	pool := fixture.Pool(t, "rbac", ns, "192.0.2.0/28")
	p := startController(t, args...)
	svc := fixture.Service(t, ns, "web")
	svcKey := client.ObjectKeyFromObject(svc)

	// Allocation: status and the pool annotation (services/status patch),
	// the pool counters (ipaddresspools/status update).
	fixture.WaitFor(t, "an address and the pool annotation on the Service", func() bool {
		return servedFrom(admin, svcKey, pool.Name)
	})
	fixture.WaitFor(t, "the pool status to count the address", func() bool {
		var got v1beta1.IPAddressPool
		err := admin.Get(ctx, client.ObjectKeyFromObject(pool), &got)
		return err == nil && got.Status.AssignedIPv4 == 1
	})

	// Another writer clears the status: the cache now disagrees with the
	// book, so the controller reads the Service from the API server
	// (services get) before serving it again.
	clearStatus(t, admin, svcKey)
	fixture.WaitFor(t, "the Service to be served again", func() bool {
		return servedFrom(admin, svcKey, pool.Name)
	})

	fixture.WaitFor(t, "ConfigurationState controller with result Valid", func() bool {
		var state v1beta1.ConfigurationState
		err := admin.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "controller"}, &state)
		return err == nil && state.Status.Result == v1beta1.ConfigurationValid
	})
	fixture.WaitFor(t, "an IPAllocated event for the Service (events.k8s.io)", func() bool {
		return hasEvent(admin, ns, "Service", svc.Name, "IPAllocated")
	})
	fixture.WaitFor(t, "a LeaderElection event for the Lease (core events)", func() bool {
		return hasEvent(admin, testenv.Namespace, "Lease", leaseName, "LeaderElection")
	})
	if out := p.Output(); containsFold(out, "forbidden") {
		t.Errorf("the controller was refused a request:\n%s", out)
	}
}

// servedFrom reports whether the Service shows an address from the test
// range and names pool in the annotation.
func servedFrom(c client.Client, key types.NamespacedName, pool string) bool {
	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil || len(svc.Status.LoadBalancer.Ingress) != 1 {
		return false
	}
	addr, err := netip.ParseAddr(svc.Status.LoadBalancer.Ingress[0].IP)
	return err == nil && netip.MustParsePrefix("192.0.2.0/28").Contains(addr) &&
		svc.Annotations["metallb.io/ip-allocated-from-pool"] == pool
}

func clearStatus(t *testing.T, c client.Client, key types.NamespacedName) {
	t.Helper()
	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil {
		t.Fatalf("get service %s: %v", key, err)
	}
	svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	if err := c.Status().Update(ctx, &svc); err != nil {
		t.Fatalf("clear status of service %s: %v", key, err)
	}
}

// permission is one request a ServiceAccount makes, and whether RBAC must
// refuse it.
type permission struct {
	name          string
	do            func() error
	wantForbidden bool
}

// checkPermissions runs each request as a subtest.
func checkPermissions(t *testing.T, tests []permission) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			switch {
			case tt.wantForbidden && !apierrors.IsForbidden(err):
				t.Errorf("got %v, want Forbidden", err)
			case !tt.wantForbidden && err != nil:
				t.Errorf("got %v, want it allowed", err)
			}
		})
	}
}
