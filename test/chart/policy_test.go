package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestAdmissionPolicy installs the chart's ValidatingAdmissionPolicy for
// real and creates pools through it (dry run): every address entry must
// get the verdict the configuration model gives it (config.ParseRange),
// and objects outside the namespace are refused with a message naming it.
func TestAdmissionPolicy(t *testing.T) {
	objs := template(t, "--show-only", "templates/admission-policy.yaml")
	if len(objs.Items) != 2 {
		t.Fatalf("rendered %d objects, want the policy and its binding", len(objs.Items))
	}
	if out, err := kubectlIn(asList(t, objs.Items), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := kubectlIn(asList(t, objs.Items), "delete", "-f", "-"); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	})
	c := testenv.Shared.Client
	pool := func(namespace string, addresses ...string) *v1beta1.IPAddressPool {
		return &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "policy-"},
			Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses}}
	}
	other := fixture.Namespace(t)
	// The API server enforces a new policy once its informer has it: wait
	// until a pool outside the namespace is refused, which also proves the
	// policy is the one refusing.
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		lastErr = c.Create(ctx, pool(other, "198.51.100.0/24"), client.DryRunAll)
		return lastErr != nil, nil
	})
	if err != nil {
		t.Fatalf("a pool outside %s is still accepted after a minute", ns)
	}
	if !apierrors.IsInvalid(lastErr) || !strings.Contains(lastErr.Error(), "only from namespace "+ns) ||
		!strings.Contains(lastErr.Error(), "IPAddressPool in namespace "+other) {
		t.Errorf("refusal of a pool in %s: %v", other, lastErr)
	}
	ad := &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere"}}
	if err := c.Create(ctx, ad, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "L2Advertisement in namespace "+other) {
		t.Errorf("an L2Advertisement in %s: %v", other, err)
	}

	entries := []string{
		"198.51.100.0/24", "198.51.100.7/24", "2001:db8::/64", "198.51.100.10-198.51.100.20",
		"198.51.100.10 - 198.51.100.20", "2001:db8::1-2001:db8::ff", "198.51.100.10-198.51.100.10",
		"198.51.100.0/33", "198.51.100.0", "198.51.100.0 /24", "198.51.100.10-2001:db8::1", "198.51.100.1-198.51.100",
		"a-b", "198.51.100.1-198.51.100.2-198.51.100.3", "fe80::1%eth0/64", "::ffff:198.51.100.1-::ffff:198.51.100.9",
		"not an address",
	}
	var accepted, refused int
	for _, e := range entries {
		t.Run(e, func(t *testing.T) {
			_, modelErr := config.ParseRange(e)
			err := c.Create(ctx, pool(ns, e), client.DryRunAll)
			switch {
			case modelErr == nil && err != nil:
				t.Errorf("the policy refuses %q, which the configuration model accepts: %v", e, err)
			case modelErr != nil && err == nil:
				t.Errorf("the policy accepts %q, which the configuration model refuses: %v", e, modelErr)
			case err != nil && !strings.Contains(err.Error(), "spec.addresses: "+e):
				t.Errorf("the refusal does not name the entry %q: %v", e, err)
			}
			if modelErr == nil {
				accepted++
			} else {
				refused++
			}
		})
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("%d entries accepted and %d refused: the table must have both", accepted, refused)
	}
}
