package controller

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/controller"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

// setRetention sets a pool's steadylb.io/retain-for annotation.
func setRetention(t *testing.T, name, window string) {
	t.Helper()
	pool := &v1beta1.IPAddressPool{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: testenv.Namespace, Name: name}, pool); err != nil {
		t.Fatalf("get pool %s: %v", name, err)
	}
	base := pool.DeepCopy()
	if pool.Annotations == nil {
		pool.Annotations = map[string]string{}
	}
	pool.Annotations[controller.AnnotationRetainFor] = window
	if err := kube().Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		t.Fatalf("annotate pool %s: %v", name, err)
	}
}

// TestRetention: a deleted Service's address stays reserved for a Service
// of the same name for its pool's window, across a SIGKILL, and nobody
// else gets it meanwhile (a waiting Service is told the pool is full
// because of it); recreated within the window, even with no record, the
// Service gets it back; after the window it is free again.
func TestRetention(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "retain", ns, "203.0.113.224/30")
	setRetention(t, "retain", "1h")
	p := startController(t)
	fixture.Services(t, ns, "s", 4)
	before := waitSettled(t, ns, "s-0", "s-1", "s-2", "s-3")
	if before["s-1"].ips != "203.0.113.225" {
		t.Fatalf("s-1 = %+v, want 203.0.113.225", before["s-1"])
	}
	fixture.Service(t, ns, "waiting")
	waitSettled(t, ns, "waiting")

	// Deleted: retained, and the waiting Service hears why it gets nothing.
	if err := kube().Delete(ctx, serviceRef(ns, "s-1")); err != nil {
		t.Fatalf("delete s-1: %v", err)
	}
	waitReservation(t, ns, "retained-s-1", v1alpha1.ReasonWaitingForService)
	fixture.WaitFor(t, "waiting to be told the pool is full of reservations", func() bool {
		return observe(t, ns)["waiting"].reason == assign.ReasonPoolExhaustedByReservations
	})
	if o := observe(t, ns)["waiting"]; o.ips != "" {
		t.Fatalf("waiting = %+v, want no address while 203.0.113.225 is retained", o)
	}

	fixture.WaitFor(t, "the metrics to count the retained address", func() bool {
		m, err := scrape.Get("http://" + p.metrics + "/metrics")
		v, ok := m.Value("steadylb_allocator_addresses_reserved", "pool", "retain")
		return err == nil && ok && v == 1
	})

	// SIGKILL while the window runs: the retention survives, nothing is
	// written.
	p.Kill()
	settled := observe(t, ns)
	startController(t)
	checkKept(t, settled, observe(t, ns))

	// Recreated from scratch (no record): the address comes back, and the
	// retained reservation goes.
	fixture.Service(t, ns, "s-1")
	got := waitSettled(t, ns, "s-1")
	checkOutcomes(t, got, []outcome{{"s-1", "203.0.113.225", assign.ReasonAssigned, ""}})
	fixture.WaitFor(t, "retained-s-1 to go once s-1 is back", func() bool {
		return !readReservation(t, ns, "retained-s-1").exists
	})

	// kubectl replace --force within the window: same address, while
	// another Service waits for room.
	replaceForce(t, ns, "s-2")
	fixture.WaitFor(t, "s-2 to be back", func() bool { return observe(t, ns)["s-2"].ips != "" })
	got = observe(t, ns)
	if got["s-2"].ips != before["s-2"].ips || got["waiting"].ips != "" {
		t.Fatalf("after replace: s-2 = %+v, waiting = %+v; want s-2 on %s and waiting without", got["s-2"], got["waiting"], before["s-2"].ips)
	}

	// After the window the address is free: the waiting Service takes it.
	setRetention(t, "retain", "2s")
	if err := kube().Delete(ctx, serviceRef(ns, "s-3")); err != nil {
		t.Fatalf("delete s-3: %v", err)
	}
	fixture.WaitFor(t, "waiting to get s-3's address once the window ends", func() bool {
		return observe(t, ns)["waiting"].ips == before["s-3"].ips
	})
	fixture.WaitFor(t, "retained-s-3 to expire", func() bool { return !readReservation(t, ns, "retained-s-3").exists })
	checkUnique(t, observe(t, ns))
}
