package controller

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/internal/lbclass"
)

// ServiceReconciler gives Services their addresses once the startup barrier
// has opened.
type ServiceReconciler struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly; it settles what a
	// possibly stale cache cannot (expectations).
	APIReader client.Reader
	// Events go out from the recorder's own goroutine, off the write path.
	Events events.EventRecorder
	// LBClass is the --lb-class flag.
	LBClass string
	// RetainFor is the --retain-for flag: how long a deleted Service's
	// addresses stay reserved for its name, unless its pool says.
	RetainFor time.Duration

	// namespace holds the configuration objects.
	namespace string

	alloc *allocator
	// gate is open while the controller may allocate: after the startup
	// barrier, and while at least one pool exists.
	gate *gate
	// ownWrites remembers, per Service, the resourceVersion our status
	// write produced when our own annotation patch followed it: a cached
	// copy at that version is known to be stale, and the patch's watch
	// event is on its way.
	ownWrites supersededVersions
	// configReport writes the ConfigurationState "controller".
	configReport configReport
	// served remembers the version at which the startup barrier served a
	// Service, so the reconcile that the informer's initial list queued
	// for it does not serve it a second time.
	served servedVersions
	// incarnations remembers which object each Service's addresses were
	// decided for.
	incarnations incarnations
	// barrier is closed once the startup barrier has run.
	barrier chan struct{}
	// poolsChanged asks for a pool status refresh after a write.
	poolsChanged func()
	// wakeWaiting asks for the Services that show no address to be
	// judged again: room was freed, or what reservations hold changed, so
	// their reason (PoolExhaustedByReservations and its count) may read
	// otherwise. A restart must find nothing stale to rewrite.
	wakeWaiting func()
}

var _ reconcile.Reconciler = (*ServiceReconciler)(nil)

// Reconcile serves one Service. It waits for the gate: no address is
// handed out before every existing one is registered, and nothing is
// written while no pool exists.
func (r *ServiceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.gate.wait(ctx); err != nil {
		return reconcile.Result{}, err
	}
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, req.NamespacedName, svc)
	if apierrors.IsNotFound(err) {
		// A deletion the cache has seen is one the API server confirmed.
		k := ipam.ServiceKey{Namespace: req.Namespace, Name: req.Name}
		r.ownWrites.forget(k)
		r.releaseDeleted(ctx, k)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get service %s: %w", req.NamespacedName, err)
	}
	if r.ownWrites.stale(assign.Key(svc), svc.ResourceVersion) || r.served.consume(assign.Key(svc), svc.ResourceVersion) {
		return reconcile.Result{}, nil
	}
	if !lbclass.Owns(svc, r.LBClass) {
		// Type changes clear status.loadBalancer in the API server itself;
		// what we wrote besides goes with it, as MetalLB does.
		if r.incarnations.replaced(assign.Key(svc), svc.UID) {
			r.releaseDeleted(ctx, assign.Key(svc))
		} else {
			r.release(ctx, assign.Key(svc))
		}
		return reconcile.Result{}, r.disown(ctx, svc)
	}
	return reconcile.Result{}, r.serve(ctx, svc)
}

// unlock releases the allocator's lock. When what reservations hold
// changed under it (a Service took its reservation over, a stand-in was
// registered or let go), the Services waiting for an address are judged
// again: their reason may read otherwise, and a restart must find nothing
// stale to rewrite.
func (r *ServiceReconciler) unlock() {
	changed := r.alloc.TakeReservedChanged()
	r.alloc.Unlock()
	if changed {
		r.wakeWaiting()
	}
}

func (r *ServiceReconciler) release(ctx context.Context, k ipam.ServiceKey) {
	r.incarnations.forget(k)
	r.alloc.Lock()
	defer r.unlock()
	if a, ok := r.alloc.Book().Release(k); ok {
		r.alloc.Freed(a.Addrs)
		log.FromContext(ctx).Info("released addresses", "service", k.String(), "addresses", a.Addrs)
		r.wakeWaiting()
	}
}

// serve makes one decision for a Service and writes it.
func (r *ServiceReconciler) serve(ctx context.Context, svc *corev1.Service) error {
	_, err := r.serveWith(ctx, svc, (*assign.Allocator).Decide)
	return err
}

// serveWith is serve with the given decide. It reports false, having
// written nothing, when the decision was deferred.
func (r *ServiceReconciler) serveWith(ctx context.Context, svc *corev1.Service,
	decide func(*assign.Allocator, *corev1.Service, labels.Set) assign.Decision) (bool, error) {
	begin := time.Now()
	nsLabels, err := r.namespaceLabels(ctx, svc.Namespace)
	if err != nil {
		return true, err
	}
	svc, err = r.confirm(ctx, svc, nsLabels)
	if err != nil || svc == nil {
		return true, err
	}
	r.alloc.Lock()
	if !r.gate.isOpen() && r.barrierDone() {
		// Every pool disappeared since the reconcile passed the gate.
		r.unlock()
		return true, nil
	}
	d := decide(&r.alloc.Allocator, svc, nsLabels)
	r.unlock()
	if d.Deferred {
		return false, nil
	}
	r.incarnations.record(assign.Key(svc), svc.UID)
	return true, r.apply(ctx, svc, d, begin)
}

// disown removes what the controller wrote on a Service that is no longer
// ours: the pool annotation, the allocation record and the condition. A
// Service we never wrote is left alone.
func (r *ServiceReconciler) disown(ctx context.Context, svc *corev1.Service) error {
	p := servicePatch{}
	p.annotate(svc, assign.AnnotationAllocatedFromPool, "")
	p.annotate(svc, assign.AnnotationAllocation, "")
	if conds := slices.Clone(svc.Status.Conditions); meta.RemoveStatusCondition(&conds, assign.ConditionAddressAssigned) {
		p.Status = &patchStatus{LoadBalancer: patchLoadBalancer{Ingress: svc.Status.LoadBalancer.Ingress}, Conditions: conds}
	}
	if p.empty() {
		return nil
	}
	written, err := p.send(ctx, r.Client, svc)
	if err != nil {
		return fmt.Errorf("remove steadylb's annotations from service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if ourAnnotations(written) != (ourAnnotationValues{}) {
		return r.patchAnnotations(ctx, written, ourAnnotationValues{})
	}
	return nil
}

// confirm implements expectations: when the cache and the book disagree
// about what a Service holds, the API server decides, read directly. A
// cache that lags behind our own write then never causes a second
// allocation, and a write made by someone else is taken into the book
// before anything is decided. It returns nil when the Service is gone.
func (r *ServiceReconciler) confirm(ctx context.Context, svc *corev1.Service, nsLabels labels.Set) (*corev1.Service, error) {
	r.alloc.Lock()
	held, _ := r.alloc.Book().Assigned(assign.Key(svc))
	r.alloc.Unlock()
	if sameAddrs(held.Addrs, assign.StatusAddresses(svc)) {
		r.settle(assign.Key(svc))
		return svc, nil
	}
	live := &corev1.Service{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, live)
	if apierrors.IsNotFound(err) {
		r.releaseDeleted(ctx, assign.Key(svc))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read service %s/%s from the API server: %w", svc.Namespace, svc.Name, err)
	}
	if r.incarnations.replaced(assign.Key(live), live.UID) {
		// The Service the book holds addresses for was deleted and one of
		// the same name created before this worker got to it: the work
		// queue merged both events. Released as the deletion would have
		// been, retention included.
		r.releaseDeleted(ctx, assign.Key(live))
	}
	r.resync(ctx, live, nsLabels)
	return live, nil
}

// resync makes the book show what the API server shows for a Service:
// whatever it holds there is registered if no one else holds it.
func (r *ServiceReconciler) resync(ctx context.Context, live *corev1.Service, nsLabels labels.Set) {
	r.alloc.Lock()
	defer r.unlock()
	k := assign.Key(live)
	held, _ := r.alloc.Book().Assigned(k)
	shown := assign.StatusAddresses(live)
	if sameAddrs(held.Addrs, shown) {
		// The write landed though its reply was lost: what the Service
		// gave up is confirmed gone.
		if freed := r.alloc.Book().Settle(k); len(freed) > 0 {
			r.alloc.Freed(freed)
			r.wakeWaiting()
		}
		return
	}
	if gone, ok := r.alloc.Book().Release(k); ok {
		defer r.alloc.Freed(gone.Addrs) // after the status claim below
	}
	if len(shown) == 0 || !lbclass.Owns(live, r.LBClass) {
		return
	}
	r.incarnations.record(k, live.UID)
	conflicts := r.alloc.Book().Restore([]ipam.Claim{r.alloc.Claim(live, nsLabels)})
	for _, c := range conflicts {
		log.FromContext(ctx).Info("address in status not registered", "service", k.String(), "address", c.Addr, "reason", c.Err.Error())
	}
}

func (r *ServiceReconciler) namespaceLabels(ctx context.Context, name string) (labels.Set, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return labels.Set{}, nil
		}
		return nil, fmt.Errorf("get namespace %s: %w", name, err)
	}
	return labels.Set(ns.Labels), nil
}

// eligibleFor re-evaluates which pools admit a Service, for
// Book.Reconfigure. A Service or namespace that cannot be read keeps no
// pool: it is re-served when its reconcile runs.
func (r *ServiceReconciler) eligibleFor(ctx context.Context, cfg *config.Config, k ipam.ServiceKey) []string {
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: k.Namespace, Name: k.Name}, svc); err != nil {
		return nil
	}
	nsLabels, err := r.namespaceLabels(ctx, k.Namespace)
	if err != nil {
		return nil
	}
	return assign.EligiblePools(cfg, k.Namespace, nsLabels, svc.Labels)
}

// supersededVersions tracks resourceVersions that our own later writes
// replaced. Versions are only compared for equality, never ordered.
type supersededVersions struct {
	mu sync.Mutex
	rv map[ipam.ServiceKey]string
}

func (s *supersededVersions) record(k ipam.ServiceKey, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == nil {
		s.rv = map[ipam.ServiceKey]string{}
	}
	s.rv[k] = rv
}

// stale reports whether a cached Service is at a version our own later
// write replaced. Any other version ends the watch for that key.
func (s *supersededVersions) stale(k ipam.ServiceKey, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.rv[k]; ok {
		if old == rv {
			return true
		}
		delete(s.rv, k)
	}
	return false
}

func (s *supersededVersions) forget(k ipam.ServiceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rv, k)
}

// incarnations maps each Service the book has decided for to the UID of
// the object it decided for. A Service deleted and created again before
// its worker gets to it reaches the worker as one event showing the new
// object; a UID other than the recorded one says the holder was deleted.
type incarnations struct {
	mu  sync.Mutex
	uid map[ipam.ServiceKey]types.UID
}

func (s *incarnations) record(k ipam.ServiceKey, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uid == nil {
		s.uid = map[ipam.ServiceKey]types.UID{}
	}
	s.uid[k] = uid
}

func (s *incarnations) forget(k ipam.ServiceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uid, k)
}

// replaced reports whether what the book holds for k was decided for
// another object than uid.
func (s *incarnations) replaced(k ipam.ServiceKey, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.uid[k]
	return ok && old != uid
}

// servedVersions is a one-shot memo: a Service served at a version needs
// no second serve at that same version, once.
type servedVersions struct {
	mu sync.Mutex
	rv map[ipam.ServiceKey]string
}

func (s *servedVersions) record(k ipam.ServiceKey, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == nil {
		s.rv = map[ipam.ServiceKey]string{}
	}
	s.rv[k] = rv
}

// consume reports whether k was served at rv, and forgets k either way.
func (s *servedVersions) consume(k ipam.ServiceKey, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.rv[k]
	delete(s.rv, k)
	return ok && old == rv
}

// barrierDone reports whether the startup barrier has run.
func (r *ServiceReconciler) barrierDone() bool {
	select {
	case <-r.barrier:
		return true
	default:
		return false
	}
}

func sameAddrs(a, b []netip.Addr) bool {
	return slices.Equal(a, b)
}
