package plugin

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/steadylb/steadylb/api/v1beta1"

	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestBadInput: every mistake is an exit code 2 and a sentence that says
// what is wrong.
func TestBadInput(t *testing.T) {
	ns := namespace(t, "mistakes", nil)
	fixture.Pool(t, "mistakes", ns, "198.51.100.20/32")
	fixture.Service(t, ns, "plain")
	fixture.Service(t, ns, "internal", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown Service", []string{"explain", "nope", "-n", ns}, "no such service: mistakes/nope"},
		{"Service not ours", []string{"explain", "internal", "-n", ns}, "is of type ClusterIP, not LoadBalancer"},
		{"unknown pool", []string{"addresses", "nope"}, `unknown pool "nope"`},
		{"bad output", []string{"pools", "-o", "xml"}, `--output "xml"`},
		{"no service named", []string{"explain"}, "accepts 1 arg"},
		{"no pools there", []string{"pools", "--steadylb-namespace", "nowhere"}, "no IPAddressPool exists in namespace nowhere"},
		{"migrate, no pools there", []string{"migrate", "--steadylb-namespace", "nowhere"}, "no IPAddressPool exists in namespace nowhere"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantFailure(t, plugin(t, c.args...), c.want) })
	}

	t.Run("configuration steadylb refuses", func(t *testing.T) {
		fixture.Pool(t, "mistakes-overlap", ns, "198.51.100.20/31")
		wantFailure(t, plugin(t, "addresses"), `IPAddressPool "mistakes-overlap": spec.addresses[0]`)
	})

	t.Run("no permission to list pools", func(t *testing.T) {
		kubeconfig, err := testenv.Shared.UserKubeconfig("reader")
		if err != nil {
			t.Fatal(err)
		}
		grant(t, "reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: []string{"list"}})
		wantFailure(t, pluginAs(t, kubeconfig, "pools"), "not allowed to list ipaddresspools.metallb.io in namespace metallb-system")
	})

	// A user who may not list AddressReservations still gets an answer,
	// with one line that says what it leaves out.
	t.Run("no permission to list reservations", func(t *testing.T) {
		kubeconfig, err := testenv.Shared.UserKubeconfig("pool-reader")
		if err != nil {
			t.Fatal(err)
		}
		grant(t, "pool-reader", rbacv1.PolicyRule{APIGroups: []string{"", "metallb.io"},
			Resources: []string{"services", "namespaces", "ipaddresspools"}, Verbs: []string{"list"}})
		r := pluginAs(t, kubeconfig, "pools")
		want := "note: not allowed to list addressreservations.steadylb.io in all namespaces; answering without reservations"
		if r.code != 0 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, want) ||
			!strings.Contains(r.stdout, "mistakes") {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 0, the pool, and one line starting %q",
				r.code, r.stdout, r.stderr, want)
		}
	})

	t.Run("no CRDs installed", func(t *testing.T) {
		bare, err := testenv.StartWith(testenv.Options{NoCRDs: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bare.Stop() })
		wantFailure(t, pluginAs(t, bare.Kubeconfig, "pools"), "the metallb.io CRDs are not installed")

		// A cluster MetalLB serves: its pools but no AddressReservation
		// CRD. The plugin answers, and says in one line that it answers
		// without reservations.
		if _, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(bare.RepoRoot, "config", "crd", "bases", "metallb.io_ipaddresspools.yaml")},
		}); err != nil {
			t.Fatal(err)
		}
		p := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "metallb", Namespace: testenv.Namespace},
			Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.40/30"}}}
		if err := bare.Client.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		r := pluginAs(t, bare.Kubeconfig, "pools")
		want := "note: the API server does not know addressreservations.steadylb.io; answering without reservations"
		if r.code != 0 || strings.TrimSpace(r.stderr) != want || !strings.Contains(r.stdout, "metallb") {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 0, the pool, and %q", r.code, r.stdout, r.stderr, want)
		}
	})
}

func wantFailure(t *testing.T, r result, want string) {
	t.Helper()
	t.Logf("exit %d: %s", r.code, r.stderr)
	if r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q (stdout %q)", r.code, r.stderr, want, r.stdout)
	}
}

// grant gives a user a ClusterRole with one rule, for the test's length.
func grant(t *testing.T, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	c := testenv.Shared.Client
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "plugin-" + user}, Rules: []rbacv1.PolicyRule{rule}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "plugin-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if err := c.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), binding)
		_ = c.Delete(context.Background(), role)
	})
	// The API server's authorizer learns of the binding from a watch, so a
	// request right after the create may still be refused: wait until it
	// allows every verb and resource of the rule.
	fixture.WaitFor(t, "the ClusterRole of user "+user+" to take effect", func() bool {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: testenv.Namespace,
							Verb: verb, Group: group, Resource: resource}}}
					if err := c.Create(t.Context(), review); err != nil || !review.Status.Allowed {
						return false
					}
				}
			}
		}
		return true
	})
}
