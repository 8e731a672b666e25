package plugin

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestViews prints every view of a small cluster the controller has
// served: a shared address, a request by IP and by pool, an IPv6 range, a
// pool without autoAssign and a Service waiting for room.
func TestViews(t *testing.T) {
	ns := namespace(t, "shop", nil)
	fixture.Pool(t, "web", ns, "198.51.100.0/30")
	pool(t, "reserve", ns, false, "203.0.113.0/31", "2001:db8::/126")
	startController(t)

	served(t, ns, "front", fixture.Annotate("metallb.io/allow-shared-ip", "front"))
	served(t, ns, "front-tls", fixture.Annotate("metallb.io/allow-shared-ip", "front"), port(corev1.ProtocolTCP, 443))
	served(t, ns, "api")
	served(t, ns, "db", fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.3"))
	served(t, ns, "pinned", fixture.Annotate("metallb.io/address-pool", "reserve"))
	served(t, ns, "extra")
	served(t, ns, "late")
	served(t, ns, "old-style", fixture.Annotate("metallb.universe.tf/address-pool", "reserve"))

	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"pools.txt", []string{"pools"}},
		{"pools-wide.txt", []string{"pools", "-o", "wide"}},
		{"pools.json", []string{"pools", "-o", "json"}},
		{"addresses.txt", []string{"addresses"}},
		{"addresses-wide.txt", []string{"addresses", "web", "-o", "wide"}},
		{"addresses-free.txt", []string{"addresses", "--free"}},
		{"addresses-free.yaml", []string{"addresses", "reserve", "--free", "-o", "yaml"}},
		{"explain-assigned.txt", []string{"explain", "front-tls", "-n", ns}},
		{"explain-waiting.txt", []string{"explain", "late", "-n", ns}},
		{"explain-deprecated.txt", []string{"explain", "old-style", "-n", ns}},
		{"migrate-safe.txt", []string{"migrate"}},
	} {
		t.Run(c.golden, func(t *testing.T) { golden(t, c.golden, succeed(t, c.args...)) })
	}
	t.Run("namespace filter", func(t *testing.T) {
		if all, mine := succeed(t, "addresses"), succeed(t, "addresses", "-n", ns); mine != all {
			t.Errorf("-n %s differs from every namespace, though every Service is in %s:\n%s\n%s", ns, ns, mine, all)
		}
		if other := succeed(t, "addresses", "-n", "default"); strings.Count(other, "\n") != 1 {
			t.Errorf("-n default lists addresses of another namespace:\n%s", other)
		}
	})
}

// pool creates a pool for namespace ns with autoAssign as given.
func pool(t *testing.T, name, ns string, autoAssign bool, addresses ...string) {
	t.Helper()
	p := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses, AutoAssign: &autoAssign,
			ServiceAllocation: &v1beta1.ServiceAllocation{Namespaces: []string{ns}}}}
	if err := testenv.Shared.Client.Create(t.Context(), p); err != nil {
		t.Fatalf("create pool %s: %v", name, err)
	}
	t.Cleanup(func() { _ = testenv.Shared.Client.Delete(context.Background(), p) })
}
