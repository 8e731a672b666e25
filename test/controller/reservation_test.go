package controller

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

// reserve creates an AddressReservation in ns.
func reserve(t *testing.T, ns, name, service string, addrs ...string) *v1alpha1.AddressReservation {
	t.Helper()
	r := &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: service, Addresses: addrs}}
	if err := kube().Create(ctx, r); err != nil {
		t.Fatalf("create AddressReservation %s: %v", name, err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), r) })
	return r
}

// reservationState is what an AddressReservation's status says.
type reservationState struct {
	exists                   bool
	bound, reason, boundTo   string
	message, resourceVersion string
}

func readReservation(t *testing.T, ns, name string) reservationState {
	t.Helper()
	r := &v1alpha1.AddressReservation{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
		if apierrors.IsNotFound(err) {
			return reservationState{}
		}
		t.Fatalf("get AddressReservation %s: %v", name, err)
	}
	s := reservationState{exists: true, boundTo: r.Status.BoundTo, resourceVersion: r.ResourceVersion}
	if c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionBound); c != nil {
		s.bound, s.reason, s.message = string(c.Status), c.Reason, c.Message
	}
	return s
}

func waitReservation(t *testing.T, ns, name, reason string) reservationState {
	t.Helper()
	var s reservationState
	fixture.WaitFor(t, "AddressReservation "+name+" to say "+reason, func() bool {
		s = readReservation(t, ns, name)
		return s.reason == reason
	})
	return s
}

// TestAddressReservation pins addresses to Service names: an address kept
// for a Service that does not exist yet is given to nobody else and goes
// to it when it is created; a reservation for an address another Service
// holds never moves that holder and takes effect when it lets go; a
// restart while a reservation waits writes nothing.
func TestAddressReservation(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "reserve", ns, "198.51.100.208/29")
	p := startController(t)

	reserve(t, ns, "for-future", "future", "198.51.100.209")
	s := waitReservation(t, ns, "for-future", v1alpha1.ReasonWaitingForService)
	if s.bound != "False" || !strings.Contains(s.message, "does not exist yet") {
		t.Errorf("for-future = %+v, want Bound False, the service does not exist yet", s)
	}
	fixture.Services(t, ns, "s", 2)
	fixture.Service(t, ns, "wants-it", fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.209"))
	got := waitSettled(t, ns, "s-0", "s-1", "wants-it")
	checkOutcomes(t, got, []outcome{
		{"s-0", "198.51.100.208", assign.ReasonAssigned, ""},
		{"s-1", "198.51.100.210", assign.ReasonAssigned, ""},
		{"wants-it", "", assign.ReasonRequestedIPInUse, "reservation:for-future"},
	})

	// A reservation for the address s-0 holds: s-0 keeps it.
	reserve(t, ns, "for-later", "later", "198.51.100.208")
	s = waitReservation(t, ns, "for-later", v1alpha1.ReasonAddressInUse)
	if !strings.Contains(s.message, "s-0") {
		t.Errorf("for-later = %+v, want it to name the holder s-0", s)
	}

	// SIGKILL while both wait: the restart writes nothing.
	p.Kill()
	startController(t)
	checkKept(t, got, observe(t, ns))
	if again := readReservation(t, ns, "for-later"); again.resourceVersion != s.resourceVersion {
		t.Errorf("the restart rewrote for-later: %+v, then %+v", s, again)
	}

	// The Service the address was kept for arrives and takes it.
	fixture.Service(t, ns, "future")
	got = waitSettled(t, ns, "future")
	checkOutcomes(t, got, []outcome{{"future", "198.51.100.209", assign.ReasonAssigned, ""}})
	waitEventSaying(t, ns, "future", assign.EventIPAllocated, "AddressReservation for-future")
	s = waitReservation(t, ns, "for-future", v1alpha1.ReasonBound)
	if s.bound != "True" || s.boundTo != "future" {
		t.Errorf("for-future = %+v, want Bound True to future", s)
	}

	// s-0 lets go: the address goes to the reservation, not to a Service
	// waiting for room, and then to "later".
	fixture.Services(t, ns, "pending", 1, fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.208"))
	if err := kube().Delete(ctx, serviceRef(ns, "s-0")); err != nil {
		t.Fatalf("delete s-0: %v", err)
	}
	waitReservation(t, ns, "for-later", v1alpha1.ReasonWaitingForService)
	if o := observe(t, ns)["pending-0"]; o.ips != "" {
		t.Errorf("pending-0 = %+v, want no address: 198.51.100.208 is reserved", o)
	}
	fixture.Service(t, ns, "later")
	got = waitSettled(t, ns, "later")
	checkOutcomes(t, got, []outcome{{"later", "198.51.100.208", assign.ReasonAssigned, ""}})
	waitReservation(t, ns, "for-later", v1alpha1.ReasonBound)
	checkUnique(t, got)
}

// TestAddressReservationValidation: the API server refuses reservations
// that name no address, a malformed one, or two of one family.
func TestAddressReservationValidation(t *testing.T) {
	ns := fixture.Namespace(t)
	for _, tt := range []struct {
		name  string
		addrs []string
		want  string
	}{
		{"none", nil, "spec.addresses"},
		{"malformed", []string{"198.51.100.300"}, "must be an IP address"},
		{"not canonical", []string{"2001:DB8::1"}, "must be an IP address"},
		{"two of one family", []string{"198.51.100.1", "198.51.100.2"}, "at most one address per family"},
		{"three", []string{"198.51.100.1", "2001:db8::1", "198.51.100.2"}, "spec.addresses"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
				Spec: v1alpha1.AddressReservationSpec{ServiceName: "web", Addresses: tt.addrs}}
			err := kube().Create(ctx, r)
			if err == nil {
				_ = kube().Delete(ctx, r)
				t.Fatalf("created a reservation with addresses %v", tt.addrs)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
