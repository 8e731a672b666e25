package controller

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/ipam"
)

// AnnotationRetainFor on an IPAddressPool sets how long the addresses of
// a deleted Service stay reserved for a Service of the same namespace and
// name (a Go duration, "0" for not at all); without it the controller's
// --retain-for applies. An annotation rather than a field keeps MetalLB's
// CRD unchanged.
const AnnotationRetainFor = "steadylb.io/retain-for"

// maxRetainFor bounds the window: a retained address is one nobody else
// may use, and a typo of a unit should not lock it away for years.
const maxRetainFor = 30 * 24 * time.Hour

// ParseRetainFor reads a retention window: a Go duration from 0 to 30
// days.
func ParseRetainFor(value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 5m or 1h", value)
	}
	if d < 0 || d > maxRetainFor {
		return 0, fmt.Errorf("%q is outside 0 to %s", value, maxRetainFor)
	}
	return d, nil
}

// retainedName is the AddressReservation that retains a deleted Service's
// addresses.
func retainedName(service string) string { return "retained-" + service }

// releaseDeleted frees what a deleted Service held. Addresses a
// reservation names go back to it; the rest stay reserved for a Service of
// the same namespace and name for the retention window of their pool, in
// an AddressReservation, so that a restart or a new leader keeps them too.
func (r *ServiceReconciler) releaseDeleted(ctx context.Context, k ipam.ServiceKey) {
	r.incarnations.forget(k)
	r.alloc.mu.Lock()
	a, ok := r.alloc.book.Release(k)
	var kept *reservation
	if ok {
		r.alloc.freed(a.Addrs)
		if window := r.retention(ctx, a.Pool); window > 0 {
			kept = r.alloc.retain(k, a.Addrs, time.Now(), window)
		}
	}
	r.unlock()
	if !ok {
		return
	}
	log.FromContext(ctx).Info("released addresses", "service", k.String(), "addresses", a.Addrs, "retained", kept != nil)
	if kept != nil {
		r.persistRetention(ctx, kept)
	}
	r.wakeWaiting()
}

// retention is the window of a pool: its annotation, else the flag. A bad
// annotation is reported on the pool and the flag applies.
func (r *ServiceReconciler) retention(ctx context.Context, poolName string) time.Duration {
	pool := &v1beta1.IPAddressPool{}
	if poolName == "" || r.Client.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: poolName}, pool) != nil {
		return r.RetainFor
	}
	value, ok := pool.Annotations[AnnotationRetainFor]
	if !ok {
		return r.RetainFor
	}
	d, err := ParseRetainFor(value)
	if err != nil {
		log.FromContext(ctx).Info("ignoring a bad retention window; using --retain-for", "pool", poolName,
			"annotation", AnnotationRetainFor, "error", err.Error())
		r.Events.Eventf(pool, nil, corev1.EventTypeWarning, EventInvalidAnnotation, "Retain",
			"annotation %s: %v; using the controller's --retain-for (%s)", AnnotationRetainFor, err, r.RetainFor)
		return r.RetainFor
	}
	return d
}

// retain reserves the addresses among addrs that nobody holds now for a
// Service named k, until now+window rounded up to the second. The caller
// holds alloc.mu.
func (alloc *allocator) retain(k ipam.ServiceKey, addrs []netip.Addr, now time.Time, window time.Duration) *reservation {
	res := &reservation{object: ipam.ServiceKey{Namespace: k.Namespace, Name: retainedName(k.Name)}, target: k,
		created: now, expires: retainUntil(now, window), retained: true, writing: true}
	for _, a := range addrs {
		if len(alloc.book.Holders(a)) == 0 {
			res.addrs = append(res.addrs, a)
		}
	}
	if len(res.addrs) == 0 || alloc.reserved == nil {
		return nil
	}
	if old := alloc.reserved.put(res); old != nil {
		alloc.releaseStandIn(old)
	}
	if conflicts := alloc.holdReservations([]*reservation{res}, now); len(conflicts) == len(res.addrs) {
		alloc.reserved.remove(res.object)
		return nil
	}
	return res
}

// retainUntil is the end of a retention window that starts at now. The API
// server keeps spec.expiresAt to the second, so the end is rounded up: a
// window is never shorter than configured.
func retainUntil(now time.Time, window time.Duration) time.Time {
	end := now.Add(window)
	if whole := end.Truncate(time.Second); whole.Before(end) {
		return whole.Add(time.Second)
	}
	return end
}

// persistRetention writes the retained reservation to the API server.
// When that fails the addresses are freed: a reservation only the
// controller's memory knows would not survive a restart, and a retained
// address is one nobody may use.
func (r *ServiceReconciler) persistRetention(ctx context.Context, res *reservation) {
	obj := &v1alpha1.AddressReservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: res.object.Namespace, Name: res.object.Name,
			Labels: map[string]string{v1alpha1.LabelRetained: "true"}},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: res.target.Name, ExpiresAt: &metav1.Time{Time: res.expires}},
	}
	for _, a := range res.addrs {
		obj.Spec.Addresses = append(obj.Spec.Addresses, a.String())
	}
	err := r.writeRetention(ctx, obj)
	r.alloc.mu.Lock()
	defer r.unlock()
	current := r.alloc.reserved.byObject[res.object] == res
	if err == nil {
		// From now on the AddressReservation speaks for it. Its watch
		// event may have reached the reservation reconciler before this
		// line, and been passed over: wake it once more (the pool
		// reconciler that releaseDeleted wakes does).
		res.writing = false
		if current {
			r.alloc.woken = append(r.alloc.woken, res.object)
		}
		return
	}
	log.FromContext(ctx).Error(err, "retain the addresses of a deleted service; freeing them", "service", res.target.String(),
		"addresses", res.addrs)
	if !current {
		return
	}
	r.alloc.reserved.remove(res.object)
	if gone, ok := r.alloc.releaseStandIn(res); ok {
		r.alloc.freed(gone.Addrs)
		r.wakeWaiting()
	}
}

// writeRetention creates the retained AddressReservation, or replaces the
// spec of the one of that name the controller made earlier. That one may
// be deleted meanwhile (its Service came back), so what it finds is read
// from the API server, not the cache, and a vanished or changed object is
// tried again.
func (r *ServiceReconciler) writeRetention(ctx context.Context, obj *v1alpha1.AddressReservation) error {
	var err error
	for range 3 {
		if err = r.Client.Create(ctx, obj.DeepCopy()); !apierrors.IsAlreadyExists(err) {
			return err
		}
		current := &v1alpha1.AddressReservation{}
		err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, current)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return err
		case current.Labels[v1alpha1.LabelRetained] != "true":
			return fmt.Errorf("AddressReservation %s/%s exists and is not one the controller made", obj.Namespace, obj.Name)
		}
		current.Spec = obj.Spec
		if err = r.Client.Update(ctx, current); !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}
