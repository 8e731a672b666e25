package plugin

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	t.Run("no CRDs installed", func(t *testing.T) {
		bare, err := testenv.StartWith(testenv.Options{NoCRDs: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bare.Stop() })
		wantFailure(t, pluginAs(t, bare.Kubeconfig, "pools"), "the metallb.io CRDs are not installed")
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
}
