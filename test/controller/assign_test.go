package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
)

// TestAssignAndExplain covers the everyday path: automatic allocation,
// requests by IP and by pool, and the reasons a Service goes without an
// address. A bad Service never disturbs a good one.
func TestAssignAndExplain(t *testing.T) {
	ns := fixture.Namespace(t)
	pool := fixture.Pool(t, "explain", ns, "192.0.2.0/30")
	metrics := proc.FreeAddr(t)
	startController(t, "--metrics-bind-address", metrics)

	fixture.Service(t, ns, "first")
	fixture.Service(t, ns, "wants-3", fixture.Annotate("metallb.io/loadBalancerIPs", "192.0.2.3"))
	fixture.Service(t, ns, "garbled", fixture.Annotate("metallb.io/loadBalancerIPs", "not-an-ip"))
	fixture.Service(t, ns, "three-ips", fixture.Annotate("metallb.io/loadBalancerIPs", "192.0.2.1,192.0.2.2,2001:db8::1"))
	fixture.Service(t, ns, "outside", fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.200"))
	fixture.Service(t, ns, "unknown-pool", fixture.Annotate("metallb.io/address-pool", "nope"))
	fixture.Service(t, ns, "old-prefix", fixture.Annotate("metallb.universe.tf/address-pool", "explain"))

	got := waitSettled(t, ns, "first", "wants-3", "garbled", "three-ips", "outside", "unknown-pool", "old-prefix")
	want := []outcome{
		{"first", "192.0.2.0", assign.ReasonAssigned, `assigned [192.0.2.0] from pool "explain"`},
		{"wants-3", "192.0.2.3", assign.ReasonAssigned, `from pool "explain"`},
		{"old-prefix", "192.0.2.1", assign.ReasonAssigned, `from pool "explain"`},
		{"garbled", "", assign.ReasonInvalidRequest, `"not-an-ip" is not an IP address`},
		{"three-ips", "", assign.ReasonInvalidRequest, "lists 3 addresses; at most 2"},
		{"outside", "", assign.ReasonNoMatchingPool, "198.51.100.200"},
		{"unknown-pool", "", assign.ReasonNoMatchingPool, `"nope"`},
	}
	checkOutcomes(t, got, want)
	for _, w := range want {
		if w.ips != "" && got[w.name].pool != "explain" {
			t.Errorf("%s: pool annotation = %q, want explain", w.name, got[w.name].pool)
		}
	}
	checkUnique(t, got)
	checkManagedFieldsKept(t, ns, "first")

	// The pool now has one free address (192.0.2.2): a new Service takes
	// it, the next one is told the pool is exhausted.
	fixture.Service(t, ns, "fourth")
	fixture.Service(t, ns, "fifth")
	got = waitSettled(t, ns, "fourth", "fifth")
	if got["fourth"].ips != "192.0.2.2" || got["fifth"].reason != assign.ReasonPoolExhausted {
		t.Fatalf("fourth = %+v, fifth = %+v; want 192.0.2.2 and PoolExhausted", got["fourth"], got["fifth"])
	}

	// Deleting a Service frees its address for the pending one.
	if err := kube().Delete(ctx, serviceRef(ns, "first")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	fixture.WaitFor(t, "fifth to get the freed address", func() bool { return observe(t, ns)["fifth"].ips == "192.0.2.0" })

	fixture.WaitFor(t, "the pool status to count 4 assigned, 0 available", func() bool {
		err := kube().Get(ctx, client.ObjectKeyFromObject(pool), pool)
		return err == nil && pool.Status.AssignedIPv4 == 4 && pool.Status.AvailableIPv4 == 0
	})
	fixture.WaitFor(t, "the metrics to show the pool in use and nothing moved", func() bool {
		m, err := scrape.Get("http://" + metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		is := func(want float64, name string, labels ...string) bool {
			v, ok := m.Value(name, labels...)
			return ok && v == want
		}
		_, timed := m.Value("steadylb_allocation_duration_seconds_count")
		return is(4, "metallb_allocator_addresses_in_use_total", "pool", "explain") &&
			is(4, "metallb_allocator_addresses_total", "pool", "explain") &&
			is(0, "steadylb_addresses_moved_total") && timed
	})

	// A deleted pool takes its metric series with it.
	spare := fixture.Pool(t, "spare", ns, "192.0.2.8/30")
	fixture.WaitFor(t, "the spare pool's series to appear", func() bool {
		m, err := scrape.Get("http://" + metrics + "/metrics")
		_, ok := m.Value("metallb_allocator_addresses_total", "pool", "spare")
		return err == nil && ok
	})
	if err := kube().Delete(ctx, spare); err != nil {
		t.Fatalf("delete the spare pool: %v", err)
	}
	fixture.WaitFor(t, "the spare pool's series to go", func() bool {
		m, err := scrape.Get("http://" + metrics + "/metrics")
		_, ok := m.Value("metallb_allocator_addresses_total", "pool", "spare")
		return err == nil && !ok
	})
}

// checkManagedFieldsKept fails when the controller's writes dropped the
// managedFields of a Service's creator: its cache strips them, and an
// update without them must leave the API server's copy alone.
func checkManagedFieldsKept(t *testing.T, ns, name string) {
	t.Helper()
	svc := &corev1.Service{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	var created, status bool
	for _, m := range svc.ManagedFields {
		created = created || (m.Operation == metav1.ManagedFieldsOperationUpdate && m.Subresource == "")
		status = status || m.Subresource == "status"
	}
	if !created || !status {
		t.Errorf("managedFields of %s = %+v, want the creator's entry and the controller's status entry", name, svc.ManagedFields)
	}
}
