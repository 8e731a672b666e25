package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

// heldServiceRead holds the Service worker in its cache read of one
// Service until the test lets it go, then returns that read only once the
// cache shows another object of that name than the one it was armed with:
// the deletion and the creation both reached the work queue meanwhile,
// which merged them into the one key the worker is busy with.
type heldServiceRead struct {
	key     types.NamespacedName
	mu      sync.Mutex
	oldUID  types.UID // armed while set
	arrived chan struct{}
	release chan struct{}
	// sawGone is set when a read found no Service under the key after the
	// hook was armed: the worker saw the deletion on its own.
	sawGone bool
	// seen is the UID the held read returned.
	seen types.UID
	once sync.Once
}

func newHeldServiceRead(ns, name string) *heldServiceRead {
	return &heldServiceRead{key: types.NamespacedName{Namespace: ns, Name: name},
		arrived: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldServiceRead) arm(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.oldUID = uid
}

func (h *heldServiceRead) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			svc, ok := obj.(*corev1.Service)
			h.mu.Lock()
			old := h.oldUID
			h.mu.Unlock()
			if !ok || key != h.key || old == "" {
				return c.Get(ctx, key, obj, opts...)
			}
			first := false
			h.once.Do(func() { first = true })
			if !first {
				err := c.Get(ctx, key, obj, opts...)
				h.noteGone(err)
				return err
			}
			close(h.arrived)
			select {
			case <-h.release:
			case <-ctx.Done():
				return ctx.Err()
			}
			// Wait for the cache to show the new object, not a deletion
			// half seen.
			var err error
			_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				err = c.Get(ctx, key, svc, opts...)
				return err == nil && svc.UID != old, nil
			})
			h.noteGone(err)
			h.mu.Lock()
			h.seen = svc.UID
			h.mu.Unlock()
			return err
		},
	}
}

func (h *heldServiceRead) noteGone(err error) {
	if apierrors.IsNotFound(err) {
		h.mu.Lock()
		h.sawGone = true
		h.mu.Unlock()
	}
}

// TestRecreatedWhileQueuedKeepsItsAddress: a Service deleted and created
// again while the Service worker is busy with it reaches the worker as one
// event, the new object, which shows no address and carries no record.
// Its addresses must be retained for it as for a deletion seen on its
// own, so it gets the same address back, not the lowest free one. s-0
// leaves a lower address free to tell the two apart.
func TestRecreatedWhileQueuedKeepsItsAddress(t *testing.T) {
	ns := fixture.Namespace(t)
	// Runs last, once the controller has stopped: the Services deleted at
	// the end leave retained addresses behind, which would fill the pool
	// of the next run (-count).
	t.Cleanup(func() {
		_ = kube().DeleteAllOf(context.Background(), &v1alpha1.AddressReservation{}, client.InNamespace(ns))
	})
	fixture.Pool(t, "merged", ns, "203.0.113.184/30")
	setRetention(t, "merged", "1h")
	hold := newHeldServiceRead(ns, "s-1")
	runInProcess(t, hold.funcs())

	fixture.Services(t, ns, "s", 3)
	before := waitSettled(t, ns, "s-0", "s-1", "s-2")
	changeService(t, ns, "s-0", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
	fixture.WaitFor(t, "s-0's address to be freed", func() bool { return observe(t, ns)["s-0"].ips == "" })
	free := before["s-0"].ips

	old := &corev1.Service{}
	if err := kube().Get(ctx, hold.key, old); err != nil {
		t.Fatalf("get s-1: %v", err)
	}
	hold.arm(old.UID)
	changeService(t, ns, "s-1", func(s *corev1.Service) { s.Labels = map[string]string{"touched": "yes"} })
	waitClosed(t, "the Service worker to read s-1", hold.arrived)

	if err := kube().Delete(ctx, serviceRef(ns, "s-1")); err != nil {
		t.Fatalf("delete s-1: %v", err)
	}
	fixture.WaitFor(t, "s-1 to be gone", func() bool {
		return apierrors.IsNotFound(kube().Get(ctx, hold.key, &corev1.Service{}))
	})
	recreated := fixture.Service(t, ns, "s-1")
	close(hold.release)

	got := waitSettled(t, ns, "s-1")
	hold.mu.Lock()
	sawGone, seen := hold.sawGone, hold.seen
	hold.mu.Unlock()
	if sawGone || seen != recreated.UID {
		t.Fatalf("the worker saw the deletion on its own (%v) or not the new s-1 (read %q, want %q): the events were not merged",
			sawGone, seen, recreated.UID)
	}
	if got["s-1"].ips == free {
		t.Errorf("s-1 took %s, the lowest free address, and lost its own", free)
	}
	checkOutcomes(t, got, []outcome{{"s-1", before["s-1"].ips, assign.ReasonAssigned, ""}})
	checkUnique(t, got)
}
