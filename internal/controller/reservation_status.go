package controller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// reservationReconciler keeps the book's stand-ins in step with the
// AddressReservations, reports in each one's status whether it is bound
// and why not, deletes the expired ones, and deletes a retained one once
// its Service is back and shows the addresses.
type reservationReconciler struct {
	services      *ServiceReconciler
	serviceEvents chan event.GenericEvent
}

var _ reconcile.Reconciler = (*reservationReconciler)(nil)

func (p *reservationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	select {
	case <-p.services.barrier:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	alloc := p.services.alloc
	obj := &v1alpha1.AddressReservation{}
	err := p.services.Client.Get(ctx, req.NamespacedName, obj)
	alloc.Lock()
	known := alloc.ReservationNamed(ipam.ServiceKey{Namespace: req.Namespace, Name: req.Name})
	writing := known != nil && known.Writing()
	alloc.Unlock()
	if writing {
		// The controller is writing it (a Service was just deleted): the
		// cache may show nothing yet, or an older object of that name.
		// persistRetention wakes this reconciler once the write is done.
		return reconcile.Result{}, nil
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, p.forgetIfGone(ctx, req.NamespacedName, known)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get AddressReservation %s: %w", req.NamespacedName, err)
	}
	res, now := assign.ReservationFrom(obj), time.Now()
	if res.Expired(now) {
		return reconcile.Result{}, p.delete(ctx, obj, "its expiresAt has passed")
	}
	target := &corev1.Service{}
	if err := p.services.Client.Get(ctx, types.NamespacedName{Namespace: res.Target().Namespace, Name: res.Target().Name}, target); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get service %s: %w", res.Target(), err)
		}
		target = nil
	}
	alloc.Lock()
	if alloc.PutReservation(res, now) {
		defer p.services.wakeWaiting()
	}
	cond, boundTo := alloc.Judge(res, target, p.services.LBClass)
	_, waiting := alloc.Book().Assigned(res.StandIn())
	p.services.unlock()

	if res.Retained() && boundTo != "" && target != nil && shows(target, res.Addrs()) {
		return reconcile.Result{}, p.delete(ctx, obj, "its service is back and shows the addresses")
	}
	if waiting && target != nil && !assign.ShowsAddress(target) {
		// The addresses wait for it: serve it now rather than at its next
		// change.
		select {
		case p.serviceEvents <- event.GenericEvent{Object: target}:
		case <-ctx.Done():
			return reconcile.Result{}, ctx.Err()
		}
	}
	if err := p.writeStatus(ctx, obj, cond, boundTo); err != nil {
		return reconcile.Result{}, err
	}
	if res.Expires().IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: res.Expires().Sub(now)}, nil
}

// forgetIfGone drops a reservation the cache no longer shows, once the
// API server confirms it is gone; what its stand-in held is then free
// again (or goes to the next reservation naming it). A cache that has not
// seen a new object yet must not free the addresses it keeps: the object
// is read from the API server, and a reservation that changed meanwhile
// (a new retention of the same name) is left alone.
func (p *reservationReconciler) forgetIfGone(ctx context.Context, name types.NamespacedName, known *assign.Reservation) error {
	if known == nil {
		return nil
	}
	err := p.services.APIReader.Get(ctx, name, &v1alpha1.AddressReservation{})
	if err == nil {
		return nil // the cache lags; the object's event follows
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("read AddressReservation %s from the API server: %w", name, err)
	}
	alloc := p.services.alloc
	alloc.Lock()
	defer p.services.unlock()
	if alloc.ForgetReservation(known) {
		p.services.wakeWaiting()
	}
	return nil
}

func (p *reservationReconciler) delete(ctx context.Context, obj *v1alpha1.AddressReservation, why string) error {
	log.FromContext(ctx).Info("deleting AddressReservation", "reservation", client.ObjectKeyFromObject(obj), "why", why)
	// The version too: the controller may have just rewritten this object
	// for a new retention, which this decision has not seen. A conflict
	// means a newer version exists, and its watch event brings the
	// reservation back here.
	err := p.services.Client.Delete(ctx, obj, client.Preconditions{UID: &obj.UID, ResourceVersion: &obj.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete AddressReservation %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	return nil
}

// shows reports whether a Service's status shows every address of addrs.
func shows(svc *corev1.Service, addrs []netip.Addr) bool {
	shown := assign.StatusAddresses(svc)
	for _, a := range addrs {
		if !slices.Contains(shown, a) {
			return false
		}
	}
	return true
}

// writeStatus writes the reservation's status when it changed.
func (p *reservationReconciler) writeStatus(ctx context.Context, obj *v1alpha1.AddressReservation, cond metav1.Condition, boundTo string) error {
	want := v1alpha1.AddressReservationStatus{BoundTo: boundTo, Conditions: slices.Clone(obj.Status.Conditions)}
	cond.ObservedGeneration = obj.Generation
	meta.SetStatusCondition(&want.Conditions, cond)
	if equality.Semantic.DeepEqual(obj.Status, want) {
		return nil
	}
	obj.Status = want
	if err := p.services.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("update status of AddressReservation %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	return nil
}
