package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/internal/lbclass"
)

// Options configure the controller.
type Options struct {
	// Namespace holds the configuration objects (--namespace).
	Namespace string
	// LBClass is the --lb-class flag.
	LBClass string
	// ConfigPollPeriod is how often the startup barrier re-reads an invalid
	// configuration. Default 2s.
	ConfigPollPeriod time.Duration
	// RetainFor is how long a deleted Service's addresses stay reserved
	// for a Service of the same namespace and name, unless its pool's
	// steadylb.io/retain-for says otherwise (--retain-for). 0: not at all.
	RetainFor time.Duration
	// LeaderElection tells the readiness check that a replica which has not
	// won the Lease is a healthy standby rather than one still starting.
	LeaderElection bool
}

// Setup adds the controller to a manager: the startup barrier, the Service
// reconciler, the pool reconciler and a readiness check that passes once
// the barrier has opened.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.ConfigPollPeriod == 0 {
		opts.ConfigPollPeriod = 2 * time.Second
	}
	registerMetrics()
	services := &ServiceReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Events: mgr.GetEventRecorder("metallb-controller"), LBClass: opts.LBClass, RetainFor: opts.RetainFor,
		namespace: opts.Namespace, alloc: &allocator{}, gate: newGate(), barrier: make(chan struct{}),
	}
	pools := &poolReconciler{services: services, namespace: opts.Namespace,
		poolEvents: make(chan event.GenericEvent, 1), serviceEvents: make(chan event.GenericEvent, 1024),
		reservationEvents: make(chan event.GenericEvent, 64)}
	services.poolsChanged = pools.trigger
	services.wakeWaiting = pools.wake

	if err := mgr.Add(&startup{cache: mgr.GetCache(), services: services, namespace: opts.Namespace,
		pollPeriod: opts.ConfigPollPeriod, settled: pools.trigger}); err != nil {
		return fmt.Errorf("add startup barrier: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).Named("service").
		For(&corev1.Service{}).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(services.inNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WatchesRawSource(source.Channel(pools.serviceEvents, &handler.EnqueueRequestForObject{})).
		Complete(services)
	if err != nil {
		return fmt.Errorf("set up service controller: %w", err)
	}
	toPools := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: opts.Namespace, Name: "pools"}}}
	})
	err = ctrl.NewControllerManagedBy(mgr).Named("pools").
		Watches(&v1beta1.IPAddressPool{}, toPools, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(pools.poolEvents, toPools)).
		Complete(pools)
	if err != nil {
		return fmt.Errorf("set up pool controller: %w", err)
	}
	reservations := &reservationReconciler{services: services, serviceEvents: pools.serviceEvents}
	err = ctrl.NewControllerManagedBy(mgr).Named("reservations").
		For(&v1alpha1.AddressReservation{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(services.reservationsOf)).
		WatchesRawSource(source.Channel(pools.reservationEvents, &handler.EnqueueRequestForObject{})).
		Complete(reservations)
	if err != nil {
		return fmt.Errorf("set up reservation controller: %w", err)
	}
	elected := mgr.Elected()
	if !opts.LeaderElection {
		// The manager closes Elected only after serving probes for a
		// while; without an election there is no standby to report.
		elected = closedChannel()
	}
	return mgr.AddReadyzCheck("startup-barrier", barrierCheck(elected, services.gate))
}

func closedChannel() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// barrierCheck is the readiness check: a leader is ready while its gate is
// open (the startup barrier has run and at least one pool exists). A
// standby has nothing to wait for and is ready, or a rolling update of two
// replicas would wait forever for the one that cannot win the Lease while
// the other holds it.
func barrierCheck(elected <-chan struct{}, g *gate) func(*http.Request) error {
	return func(*http.Request) error {
		if g.isOpen() {
			return nil
		}
		select {
		case <-elected:
			return errors.New("not allocating: the startup barrier has not opened yet, or no IPAddressPool exists")
		default:
			return nil // standby
		}
	}
}

// reservationsOf maps a Service to the reservations that name it: their
// status follows it.
func (r *ServiceReconciler) reservationsOf(_ context.Context, svc client.Object) []reconcile.Request {
	r.alloc.Lock()
	defer r.alloc.Unlock()
	var out []reconcile.Request
	for _, k := range r.alloc.ReservationsOf(ipam.ServiceKey{Namespace: svc.GetNamespace(), Name: svc.GetName()}) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: k.Namespace, Name: k.Name}})
	}
	return out
}

// inNamespace maps a namespace whose labels changed to its Services: pool
// eligibility may have changed.
func (r *ServiceReconciler) inNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns.GetName())); err != nil {
		log.FromContext(ctx).Error(err, "list services of namespace", "namespace", ns.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if lbclass.Owns(&list.Items[i], r.LBClass) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// poolReconciler reloads the pool configuration when a pool changes, tells
// the book, re-serves the Services, and keeps pool status up to date.
type poolReconciler struct {
	services      *ServiceReconciler
	namespace     string
	poolEvents    chan event.GenericEvent
	serviceEvents chan event.GenericEvent
	// reservationEvents asks for the status of reservations that freed
	// addresses went to.
	reservationEvents chan event.GenericEvent
	// waking is set when the waiting Services must be judged again (room
	// freed, reservations changed) since the last run.
	waking atomic.Bool
	// lastStatusWrite is when pool status was last written; the reconciler
	// has one worker, so only it touches this.
	lastStatusWrite time.Time
}

// poolStatusInterval spaces pool status writes: every Service write asks
// for one, and during a burst of allocations one round per second is
// plenty for the counters and costs the API server far less.
const poolStatusInterval = time.Second

// wake records that the Services waiting for an address must be judged
// again (addresses were released, or what reservations hold changed), by
// the next run.
func (p *poolReconciler) wake() {
	p.waking.Store(true)
	p.trigger()
}

// trigger asks for a pool status refresh without blocking.
func (p *poolReconciler) trigger() {
	select {
	case p.poolEvents <- event.GenericEvent{Object: &v1beta1.IPAddressPool{}}:
	default: // one is already queued
	}
}

func (p *poolReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	select {
	case <-p.services.barrier:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	if err := p.reload(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if p.waking.Swap(false) {
		if err := p.wakeReservations(ctx); err != nil {
			return reconcile.Result{}, err
		}
		if err := p.requeueServices(ctx, waitingForAddress); err != nil {
			return reconcile.Result{}, err
		}
	}
	if wait := poolStatusInterval - time.Since(p.lastStatusWrite); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	p.lastStatusWrite = time.Now()
	return reconcile.Result{}, writePoolStatus(ctx, p.services.Client, p.services.alloc, p.namespace)
}

// reload applies a changed pool configuration. Assignments it invalidates
// stay held until their Service is reconciled (make before break); every
// Service is re-queued, since freed or added room may serve pending ones.
// When every pool is gone the book keeps the last configuration and the
// gate closes: an empty configuration is far more often a mistake (pools
// applied after the controller, the wrong namespace) than a wish to clear
// every address.
func (p *poolReconciler) reload(ctx context.Context) error {
	alloc := p.services.alloc
	alloc.Lock()
	last, refused := alloc.fingerprint, alloc.refused
	alloc.Unlock()
	// Checked before building: every Service write triggers this
	// reconciler for the pool status, and the pools rarely change.
	pools, fingerprint, err := listPools(ctx, p.services.Client, p.namespace)
	if err != nil || (fingerprint == last && !refused && p.services.gate.isOpen()) {
		return err
	}
	if len(pools) == 0 {
		p.closeForNoPools(ctx)
		return nil
	}
	cfg, err := buildConfig(ctx, p.services, pools)
	alloc.Lock()
	alloc.refused = err != nil
	alloc.Unlock()
	if err != nil {
		log.FromContext(ctx).Info("keeping the last valid configuration", "error", err.Error())
		return nil
	}
	alloc.Lock()
	report, err := alloc.Reconfigure(cfg, func(k ipam.ServiceKey) []string {
		return p.services.eligibleFor(ctx, cfg, k)
	})
	if err == nil {
		alloc.fingerprint = fingerprint
		p.services.gate.openGate()
	}
	alloc.Unlock()
	if err != nil {
		return fmt.Errorf("apply pool configuration: %w", err)
	}
	log.FromContext(ctx).Info("pool configuration changed", "invalid", len(report.Invalid), "moved", len(report.Moved))
	return p.requeueServices(ctx, func(*corev1.Service) bool { return true })
}

// closeForNoPools stops allocation while no pool exists, and says why.
func (p *poolReconciler) closeForNoPools(ctx context.Context) {
	alloc := p.services.alloc
	alloc.Lock()
	wasOpen := p.services.gate.isOpen()
	p.services.gate.closeGate()
	alloc.Unlock()
	if wasOpen {
		log.FromContext(ctx).Info("every IPAddressPool is gone: keeping every address and allocating nothing until a pool exists",
			"namespace", p.namespace)
	}
	if err := p.services.configReport.write(ctx, p.services.Client, p.namespace, errNoPools(p.namespace)); err != nil {
		log.FromContext(ctx).Error(err, "report configuration state")
	}
	configStale.Set(1)
}

// wakeReservations queues the reservations freed addresses went to.
func (p *poolReconciler) wakeReservations(ctx context.Context) error {
	p.services.alloc.Lock()
	woken := p.services.alloc.TakeWoken()
	p.services.alloc.Unlock()
	for _, k := range woken {
		obj := &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		select {
		case p.reservationEvents <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// waitingForAddress selects Services that show no address.
func waitingForAddress(svc *corev1.Service) bool { return !assign.ShowsAddress(svc) }

// requeueServices sends our Services that match keep to the Service
// reconciler, oldest first, so that freed room goes to the Service that
// has waited longest (the work queue serves in the order it is fed).
func (p *poolReconciler) requeueServices(ctx context.Context, keep func(*corev1.Service) bool) error {
	var list corev1.ServiceList
	if err := p.services.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	var chosen []*corev1.Service
	for i := range list.Items {
		if lbclass.Owns(&list.Items[i], p.services.LBClass) && keep(&list.Items[i]) {
			chosen = append(chosen, &list.Items[i])
		}
	}
	slices.SortFunc(chosen, assign.OlderFirst)
	for _, svc := range chosen {
		select {
		case p.serviceEvents <- event.GenericEvent{Object: svc}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
