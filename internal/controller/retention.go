package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// AnnotationRetainFor on an IPAddressPool sets how long the addresses of
// a deleted Service stay reserved for a Service of the same namespace and
// name (a Go duration, "0" for not at all); without it the controller's
// --retain-for applies. An annotation rather than a field keeps MetalLB's
// CRD unchanged.
const AnnotationRetainFor = "steadylb.io/retain-for"

// EventInvalidAnnotation is the Warning event for a pool whose
// AnnotationRetainFor is bad.
const EventInvalidAnnotation = "InvalidAnnotation"

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

// releaseDeleted frees what a deleted Service held. Addresses a
// reservation names go back to it; the rest stay reserved for a Service of
// the same namespace and name for the retention window of their pool, in
// an AddressReservation, so that a restart or a new leader keeps them too.
func (r *ServiceReconciler) releaseDeleted(ctx context.Context, k ipam.ServiceKey) {
	r.incarnations.forget(k)
	r.alloc.Lock()
	a, ok := r.alloc.Book().Release(k)
	var kept *assign.Reservation
	if ok {
		r.alloc.Freed(a.Addrs)
		if window := r.retention(ctx, a.Pool); window > 0 {
			kept = r.alloc.Retain(k, a.Addrs, time.Now(), window)
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

// persistRetention writes the retained reservation to the API server.
// When that fails the addresses are freed: a reservation only the
// controller's memory knows would not survive a restart, and a retained
// address is one nobody may use.
func (r *ServiceReconciler) persistRetention(ctx context.Context, res *assign.Reservation) {
	obj := &v1alpha1.AddressReservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: res.Object().Namespace, Name: res.Object().Name,
			Labels: map[string]string{v1alpha1.LabelRetained: "true"}},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: res.Target().Name, ExpiresAt: &metav1.Time{Time: res.Expires()}},
	}
	for _, a := range res.Addrs() {
		obj.Spec.Addresses = append(obj.Spec.Addresses, a.String())
	}
	err := r.writeRetention(ctx, obj)
	r.alloc.Lock()
	defer r.unlock()
	if err == nil {
		// The reservation reconciler hears of it once more: from the pool
		// reconciler, which releaseDeleted wakes.
		r.alloc.RetentionWritten(res)
		return
	}
	log.FromContext(ctx).Error(err, "retain the addresses of a deleted service; freeing them", "service", res.Target().String(),
		"addresses", res.Addrs())
	if r.alloc.ForgetReservation(res) {
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
