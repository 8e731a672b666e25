package statusobj

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// ServiceOf returns the Service an object reports on, from its labels.
func ServiceOf(o client.Object) (types.NamespacedName, bool) {
	l := o.GetLabels()
	ns, name := l[v1beta1.LabelServiceNamespace], l[v1beta1.LabelServiceName]
	if ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// NodeOf returns the node an object reports for: its label, or
// statusNode (its status.node) for an object that lost the label.
func NodeOf(o client.Object, statusNode string) string {
	if n := o.GetLabels()[v1beta1.LabelNode]; n != "" {
		return n
	}
	return statusNode
}

// Delete deletes the very object given (by UID), and succeeds when it is
// gone already.
func Delete(ctx context.Context, c client.Client, o client.Object) error {
	uid := o.GetUID()
	err := c.Delete(ctx, o, client.Preconditions{UID: &uid})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("delete %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
}

// Held is one node's objects of one kind, at most one per Service: what
// its writer last wrote, never read back from a cache that may lag. It is
// safe for concurrent use.
type Held[T client.Object] struct {
	mu sync.Mutex
	m  map[types.NamespacedName]T
}

// NewHeld returns an empty Held.
func NewHeld[T client.Object]() *Held[T] { return &Held[T]{m: map[types.NamespacedName]T{}} }

// Get returns the object held for svc; ok is false when there is none.
func (h *Held[T]) Get(svc types.NamespacedName) (obj T, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	obj, ok = h.m[svc]
	return obj, ok
}

// Put records the object now held for svc.
func (h *Held[T]) Put(svc types.NamespacedName, obj T) {
	// obj comes back from a write, with the managedFields the caches strip:
	// a third of the object, kept for every Service, and never read.
	obj.SetManagedFields(nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[svc] = obj
}

// Forget drops the object held for svc.
func (h *Held[T]) Forget(svc types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, svc)
}

// Services are the Services an object is held for, sorted.
func (h *Held[T]) Services() []types.NamespacedName {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.SortedFunc(maps.Keys(h.m), func(a, b types.NamespacedName) int {
		return cmp.Compare(a.String(), b.String())
	})
}

// Lost is told that obj was deleted, by whoever: when it is the one held
// for its Service (same UID), it is forgotten, so the next write creates a
// new one, and Lost returns that Service.
func (h *Held[T]) Lost(obj T) (svc types.NamespacedName, forgotten bool) {
	svc, ok := ServiceOf(obj)
	if !ok {
		return svc, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, held := h.m[svc]; !held || cur.GetUID() != obj.GetUID() {
		return svc, false
	}
	delete(h.m, svc)
	return svc, true
}

// Adopt takes a node's objects left by an earlier run as held: of several
// for one Service it keeps the oldest and deletes the others; one that
// names no Service is deleted. objs must be this node's and the caller's
// own copies.
func (h *Held[T]) Adopt(ctx context.Context, c client.Client, objs []T) error {
	byService := map[types.NamespacedName][]T{}
	var errs []error
	for _, o := range objs {
		svc, ok := ServiceOf(o)
		if !ok {
			errs = append(errs, Delete(ctx, c, o))
			continue
		}
		byService[svc] = append(byService[svc], o)
	}
	for svc, list := range byService {
		slices.SortFunc(list, func(a, b T) int {
			return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time), cmp.Compare(a.GetName(), b.GetName()))
		})
		h.Put(svc, list[0])
		for _, extra := range list[1:] {
			errs = append(errs, Delete(ctx, c, extra))
		}
	}
	return errors.Join(errs...)
}
