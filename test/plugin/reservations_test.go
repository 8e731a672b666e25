package plugin

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestReservations prints the views of a pool that reservations fill: an
// AddressReservation for a Service that does not exist yet, the address
// of a deleted Service retained by the controller (--retain-for), and a
// Service that waits because of them. explain agrees with the
// controller's PoolExhaustedByReservations, then with the Service the
// reservation was for once it exists.
func TestReservations(t *testing.T) {
	ns := namespace(t, "keep", nil)
	c := testenv.Shared.Client
	// Runs last, once the controller is stopped: nothing retains the
	// addresses of the Services the test leaves behind.
	t.Cleanup(func() {
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.AddressReservation{}, client.InNamespace(ns))
	})
	fixture.Pool(t, "keep", ns, "198.51.100.32/30")
	reserve(t, ns, "keep-future", "future", "198.51.100.33")
	startController(t, "--retain-for", "1h")

	served(t, ns, "app")
	served(t, ns, "gone")
	served(t, ns, "third")
	if err := c.Delete(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the controller to retain the address of gone", func() bool {
		return c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "retained-gone"}, &v1alpha1.AddressReservation{}) == nil
	})
	served(t, ns, "late")
	if cond := condition(t, ns, "late"); cond.Reason != assign.ReasonPoolExhaustedByReservations {
		t.Fatalf("the controller gave late %s (%s), the test expects PoolExhaustedByReservations", cond.Reason, cond.Message)
	}

	for _, g := range []struct {
		golden string
		args   []string
	}{
		{"reserved-pools.txt", []string{"pools"}},
		{"reserved-pools-wide.txt", []string{"pools", "-o", "wide"}},
		{"reserved-addresses.txt", []string{"addresses", "keep"}},
		{"reserved-explain-late.txt", []string{"explain", "late", "-n", ns}},
	} {
		t.Run(g.golden, func(t *testing.T) { golden(t, g.golden, succeed(t, g.args...)) })
	}
	t.Run("no free span", func(t *testing.T) {
		if free := succeed(t, "addresses", "keep", "--free"); strings.Count(free, "\n") != 1 {
			t.Errorf("reserved addresses listed as free:\n%s", free)
		}
	})
	t.Run("explain agrees", func(t *testing.T) {
		e, cond := explain(t, ns, "late"), condition(t, ns, "late")
		if e.Decision.Reason != cond.Reason || !e.Agrees || e.Recorded == nil || e.Recorded.Message != cond.Message {
			t.Errorf("explain decided %s (agrees %v: %s), recorded %+v; the condition says %s: %s",
				e.Decision.Reason, e.Agrees, e.Disagreement, e.Recorded, cond.Reason, cond.Message)
		}
	})

	// The Service the reservation waited for arrives and takes it.
	served(t, ns, "future")
	e, cond := explain(t, ns, "future"), condition(t, ns, "future")
	if cond.Reason != assign.ReasonAssigned || !e.Agrees || strings.Join(e.Addresses, ",") != "198.51.100.33" {
		t.Fatalf("future: condition %s, explain %v (agrees %v: %s), want Assigned 198.51.100.33 and agreement",
			cond.Reason, e.Addresses, e.Agrees, e.Disagreement)
	}
	golden(t, "reserved-explain-future.txt", succeed(t, "explain", "future", "-n", ns))
}

// reserve creates an AddressReservation.
func reserve(t *testing.T, ns, name, service string, addrs ...string) {
	t.Helper()
	r := &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: service, Addresses: addrs}}
	if err := testenv.Shared.Client.Create(t.Context(), r); err != nil {
		t.Fatalf("create AddressReservation %s: %v", name, err)
	}
}
