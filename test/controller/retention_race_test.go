package controller

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

// heldCreate holds the controller's create of one AddressReservation until
// the test lets it go, and notes whether the controller then read that
// reservation from its cache and found nothing.
type heldCreate struct {
	name    string
	arrived chan struct{} // closed when the create reached the hook
	release chan struct{} // closed by the test to let it through
	missed  chan struct{} // closed when a cache read found nothing, while held

	once, missOnce sync.Once
}

func newHeldCreate(name string) *heldCreate {
	return &heldCreate{name: name, arrived: make(chan struct{}), release: make(chan struct{}), missed: make(chan struct{})}
}

func (h *heldCreate) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*v1alpha1.AddressReservation); ok && obj.GetName() == h.name {
				h.once.Do(func() { close(h.arrived) })
				select {
				case <-h.release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return c.Create(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if _, ok := obj.(*v1alpha1.AddressReservation); ok && key.Name == h.name && apierrors.IsNotFound(err) && h.held() {
				h.missOnce.Do(func() { close(h.missed) })
			}
			return err
		},
	}
}

// held reports whether the create has arrived and is still held.
func (h *heldCreate) held() bool {
	select {
	case <-h.arrived:
	default:
		return false
	}
	select {
	case <-h.release:
		return false
	default:
		return true
	}
}

// waitClosed waits for a channel the controller's requests close.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	fixture.WaitFor(t, what, func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	})
}

// TestRetentionHoldsBeforeItsObjectExists: a deleted Service's address is
// held for it from the moment it is released, whatever the cache shows
// about the AddressReservation that records the retention. The create of
// retained-s-1 is held back, and meanwhile an event for s-1 (a ClusterIP
// Service of that name) makes the reservation reconciler look for it in
// the cache and find nothing: the address must stay retained, not go to
// the Service waiting for room once the create is let through. Holding
// the create makes deterministic the window that a delete followed at
// once by a create opened about one time in ten (the first event reached
// the reservation reconciler before its object reached the cache).
//
// The controller runs in this process, its create going through a hook;
// the API server, the cache and the events are real.
func TestRetentionHoldsBeforeItsObjectExists(t *testing.T) {
	ns := fixture.Namespace(t)
	// Markers live in a namespace of their own, with a pool the waiting
	// Service may not use.
	markers := fixture.Namespace(t)
	// Runs last, once the controller has stopped: the Services deleted at
	// the end leave their addresses retained, which would fill the pool of
	// the next run (-count).
	t.Cleanup(func() {
		for _, n := range []string{ns, markers} {
			_ = kube().DeleteAllOf(context.Background(), &v1alpha1.AddressReservation{}, client.InNamespace(n))
		}
	})
	fixture.Pool(t, "race", ns, "203.0.113.236/30")
	setRetention(t, "race", "1h")
	fixture.Pool(t, "race-markers", markers, "203.0.113.244/30")
	hold := newHeldCreate("retained-s-1")
	runInProcess(t, hold.funcs())

	fixture.Services(t, ns, "s", 4)
	before := waitSettled(t, ns, "s-0", "s-1", "s-2", "s-3")
	fixture.Service(t, ns, "waiting")
	waitSettled(t, ns, "waiting")

	if err := kube().Delete(ctx, serviceRef(ns, "s-1")); err != nil {
		t.Fatalf("delete s-1: %v", err)
	}
	waitClosed(t, "the controller to create retained-s-1", hold.arrived)
	fixture.Service(t, ns, "s-1", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
	waitClosed(t, "the reservation reconciler to miss retained-s-1 in its cache", hold.missed)
	// The reservation reconciler has one worker: once a later reservation
	// has its status, the reconcile that missed retained-s-1 is over.
	reserve(t, markers, "marker", "nobody", "198.51.100.190")
	waitReservation(t, markers, "marker", v1alpha1.ReasonNotInPool)
	close(hold.release)

	fixture.WaitFor(t, "retained-s-1 to be judged", func() bool { return readReservation(t, ns, "retained-s-1").reason != "" })
	// The Service reconciler has one worker, fed in watch order: once a
	// Service created after the waiting one was touched has its address,
	// the waiting one has been judged since the create went through.
	changeService(t, ns, "waiting", func(s *corev1.Service) { s.Labels = map[string]string{"touched": "yes"} })
	fixture.Service(t, markers, "marker")
	waitSettled(t, markers, "marker")
	if o := observe(t, ns)["waiting"]; o.ips != "" || o.reason != assign.ReasonPoolExhaustedByReservations {
		t.Fatalf("waiting = %+v; want no address while s-1's is retained, %s", o, assign.ReasonPoolExhaustedByReservations)
	}
	if r := readReservation(t, ns, "retained-s-1"); r.reason != v1alpha1.ReasonWaitingForService {
		t.Fatalf("retained-s-1 = %+v, want %s", r, v1alpha1.ReasonWaitingForService)
	}

	changeService(t, ns, "s-1", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	got := waitSettled(t, ns, "s-1")
	checkOutcomes(t, got, []outcome{{"s-1", before["s-1"].ips, assign.ReasonAssigned, ""}})
	fixture.WaitFor(t, "waiting to be told the pool is simply full", func() bool {
		got = observe(t, ns)
		return got["waiting"].reason == assign.ReasonPoolExhausted
	})
	checkUnique(t, got)
}
