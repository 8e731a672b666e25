package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

// staleCase is one event that can change the reason of a Service waiting
// for room, as TestRestartFindsNoStaleReason runs it.
type staleCase struct {
	name   string
	pool   string // the pool's one range, a /30
	retain string // the pool's retain-for annotation; "" for none
	// reserved are the addresses of the pool kept by AddressReservation
	// keep-<i> for the Service future-<i>, created before the Services.
	reserved []string
	holders  int // Services that fill the rest of the pool
	// before is what "waiting" shows before act; after, once the
	// controller has acted on it.
	before, after outcome
	act           func(t *testing.T, ns string, pool *v1beta1.IPAddressPool)
}

// TestRestartFindsNoStaleReason: every event that can change the reason
// of a Service waiting for room (a reservation bound, expired or deleted;
// a pool added or grown; a Service deleted, with and without retention)
// makes the running controller judge the waiting Service again at once,
// so that a SIGKILL restart finds nothing to rewrite: every Service shows
// the same addresses and condition before and after, and none is written.
func TestRestartFindsNoStaleReason(t *testing.T) {
	const byReservations, exhausted = assign.ReasonPoolExhaustedByReservations, assign.ReasonPoolExhausted
	cases := []staleCase{
		{name: "reservation bound", pool: "198.51.100.224/30", reserved: []string{"198.51.100.227"}, holders: 3,
			before: outcome{"waiting", "", byReservations, "1 addresses"},
			after:  outcome{"waiting", "", exhausted, ""},
			act:    func(t *testing.T, ns string, _ *v1beta1.IPAddressPool) { fixture.Service(t, ns, "future-0") }},
		{name: "one of two reservations bound", pool: "198.51.100.228/30", reserved: []string{"198.51.100.230", "198.51.100.231"}, holders: 2,
			before: outcome{"waiting", "", byReservations, "2 addresses"},
			after:  outcome{"waiting", "", byReservations, "1 addresses"},
			act:    func(t *testing.T, ns string, _ *v1beta1.IPAddressPool) { fixture.Service(t, ns, "future-0") }},
		{name: "reservation expired", pool: "198.51.100.232/30", reserved: []string{"198.51.100.235"}, holders: 3,
			before: outcome{"waiting", "", byReservations, "1 addresses"},
			after:  outcome{"waiting", "198.51.100.235", assign.ReasonAssigned, ""},
			act:    expireReservation("keep-0")},
		{name: "reservation deleted", pool: "198.51.100.236/30", reserved: []string{"198.51.100.239"}, holders: 3,
			before: outcome{"waiting", "", byReservations, "1 addresses"},
			after:  outcome{"waiting", "198.51.100.239", assign.ReasonAssigned, ""},
			act: func(t *testing.T, ns string, _ *v1beta1.IPAddressPool) {
				if err := kube().Delete(ctx, &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep-0"}}); err != nil {
					t.Fatalf("delete keep-0: %v", err)
				}
			}},
		{name: "pool added", pool: "198.51.100.240/30", holders: 4,
			before: outcome{"waiting", "", exhausted, ""},
			after:  outcome{"waiting", "198.51.100.248", assign.ReasonAssigned, ""},
			act: func(t *testing.T, ns string, pool *v1beta1.IPAddressPool) {
				fixture.Pool(t, pool.Name+"-added", ns, "198.51.100.248/30")
			}},
		{name: "pool grown", pool: "198.51.100.244/30", holders: 4,
			before: outcome{"waiting", "", exhausted, ""},
			after:  outcome{"waiting", "198.51.100.252", assign.ReasonAssigned, ""},
			act:    growPool("198.51.100.252/30")},
		{name: "service deleted, retained", pool: "203.0.113.128/30", retain: "1h", holders: 4,
			before: outcome{"waiting", "", exhausted, ""},
			after:  outcome{"waiting", "", byReservations, "1 addresses"},
			act:    deleteService("s-1")},
		{name: "service deleted", pool: "203.0.113.132/30", holders: 4,
			before: outcome{"waiting", "", exhausted, ""},
			after:  outcome{"waiting", "203.0.113.133", assign.ReasonAssigned, ""},
			act:    deleteService("s-1")},
	}
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) { runStaleCase(t, fmt.Sprintf("stale-%d", i), tt) })
	}
}

func runStaleCase(t *testing.T, poolName string, tt staleCase) {
	ns := fixture.Namespace(t)
	// The reservations the controller makes here (a retained address)
	// outlive the namespace on an API server without a namespace
	// controller: the next run of the case (-count) would find its pool's
	// address still retained.
	t.Cleanup(func() {
		_ = kube().DeleteAllOf(context.Background(), &v1alpha1.AddressReservation{}, client.InNamespace(ns))
	})
	pool := fixture.Pool(t, poolName, ns, tt.pool)
	if tt.retain != "" {
		setRetention(t, poolName, tt.retain)
	}
	for i, addr := range tt.reserved {
		reserve(t, ns, fmt.Sprintf("keep-%d", i), fmt.Sprintf("future-%d", i), addr)
	}
	p := startController(t)
	names := append(fixture.Services(t, ns, "s", tt.holders), "waiting")
	fixture.Service(t, ns, "waiting")
	checkOutcomes(t, waitSettled(t, ns, names...), []outcome{tt.before})

	tt.act(t, ns, pool)
	fixture.WaitFor(t, fmt.Sprintf("waiting to show %+v", tt.after), func() bool {
		o := observe(t, ns)["waiting"]
		return o.ips == tt.after.ips && o.reason == tt.after.reason && strings.Contains(o.message, tt.after.message)
	})
	p.waitIdle(t)
	before := observe(t, ns)

	p.Kill()
	startController(t)
	after := observe(t, ns)
	checkKept(t, before, after)
	for name, b := range before {
		if a := after[name]; a.reason != b.reason || a.message != b.message {
			t.Errorf("%s: condition %s %q before the restart, %s %q after", name, b.reason, b.message, a.reason, a.message)
		}
	}
	checkUnique(t, after)
}

// expireReservation moves a reservation's expiresAt to the next second.
func expireReservation(name string) func(*testing.T, string, *v1beta1.IPAddressPool) {
	return func(t *testing.T, ns string, _ *v1beta1.IPAddressPool) {
		r := &v1alpha1.AddressReservation{}
		if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		r.Spec.ExpiresAt = &metav1.Time{Time: time.Now().Add(time.Second)}
		if err := kube().Update(ctx, r); err != nil {
			t.Fatalf("expire %s: %v", name, err)
		}
	}
}

// growPool adds a range to a pool.
func growPool(addresses string) func(*testing.T, string, *v1beta1.IPAddressPool) {
	return func(t *testing.T, _ string, pool *v1beta1.IPAddressPool) {
		live := &v1beta1.IPAddressPool{}
		if err := kube().Get(ctx, client.ObjectKeyFromObject(pool), live); err != nil {
			t.Fatalf("get pool %s: %v", pool.Name, err)
		}
		live.Spec.Addresses = append(live.Spec.Addresses, addresses)
		if err := kube().Update(ctx, live); err != nil {
			t.Fatalf("grow pool %s: %v", pool.Name, err)
		}
	}
}

func deleteService(name string) func(*testing.T, string, *v1beta1.IPAddressPool) {
	return func(t *testing.T, ns string, _ *v1beta1.IPAddressPool) {
		if err := kube().Delete(ctx, serviceRef(ns, name)); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
}
