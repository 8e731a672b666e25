package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// ServiceReconciler gives Services their addresses once the startup barrier
// has opened.
type ServiceReconciler struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly; it settles what a
	// possibly stale cache cannot (expectations).
	APIReader client.Reader
	Events    events.EventRecorder
	// LBClass is the --lb-class flag.
	LBClass string

	alloc *allocator
	ready chan struct{}
	// ownWrites remembers, per Service, the resourceVersion our status
	// write produced when our own annotation patch followed it: a cached
	// copy at that version is known to be stale, and the patch's watch
	// event is on its way.
	ownWrites supersededVersions
	// poolsChanged asks for a pool status refresh after a write.
	poolsChanged func()
	// roomFreed asks for the pending Services to be served again.
	roomFreed func()
}

var _ reconcile.Reconciler = (*ServiceReconciler)(nil)

func key(svc *corev1.Service) ipam.ServiceKey {
	return ipam.ServiceKey{Namespace: svc.Namespace, Name: svc.Name}
}

// Reconcile serves one Service. It waits for the startup barrier, so no
// address is handed out before every existing one is registered.
func (r *ServiceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, req.NamespacedName, svc)
	if apierrors.IsNotFound(err) {
		// A deletion the cache has seen is one the API server confirmed.
		k := ipam.ServiceKey{Namespace: req.Namespace, Name: req.Name}
		r.ownWrites.forget(k)
		r.release(ctx, k)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get service %s: %w", req.NamespacedName, err)
	}
	if r.ownWrites.stale(key(svc), svc.ResourceVersion) {
		return reconcile.Result{}, nil
	}
	if !Owns(svc, r.LBClass) {
		// Type changes clear status.loadBalancer in the API server itself.
		r.release(ctx, key(svc))
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.serve(ctx, svc)
}

func (r *ServiceReconciler) release(ctx context.Context, k ipam.ServiceKey) {
	r.alloc.mu.Lock()
	defer r.alloc.mu.Unlock()
	if a, ok := r.alloc.book.Release(k); ok {
		log.FromContext(ctx).Info("released addresses", "service", k.String(), "addresses", a.Addrs)
		r.roomFreed()
	}
}

// serve makes one decision for a Service and writes it.
func (r *ServiceReconciler) serve(ctx context.Context, svc *corev1.Service) error {
	begin := time.Now()
	nsLabels, err := r.namespaceLabels(ctx, svc.Namespace)
	if err != nil {
		return err
	}
	svc, err = r.confirm(ctx, svc, nsLabels)
	if err != nil || svc == nil {
		return err
	}
	r.alloc.mu.Lock()
	d := decide(r.alloc, svc, nsLabels)
	r.alloc.mu.Unlock()
	return r.apply(ctx, svc, d, begin)
}

// confirm implements expectations: when the cache and the book disagree
// about what a Service holds, the API server decides, read directly. A
// cache that lags behind our own write then never causes a second
// allocation, and a write made by someone else is taken into the book
// before anything is decided. It returns nil when the Service is gone.
func (r *ServiceReconciler) confirm(ctx context.Context, svc *corev1.Service, nsLabels labels.Set) (*corev1.Service, error) {
	r.alloc.mu.Lock()
	held, _ := r.alloc.book.Assigned(key(svc))
	r.alloc.mu.Unlock()
	if sameAddrs(held.Addrs, statusAddresses(svc)) {
		return svc, nil
	}
	live := &corev1.Service{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, live)
	if apierrors.IsNotFound(err) {
		r.release(ctx, key(svc))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read service %s/%s from the API server: %w", svc.Namespace, svc.Name, err)
	}
	r.resync(ctx, live, nsLabels)
	return live, nil
}

// resync makes the book show what the API server shows for a Service:
// whatever it holds there is registered if no one else holds it.
func (r *ServiceReconciler) resync(ctx context.Context, live *corev1.Service, nsLabels labels.Set) {
	r.alloc.mu.Lock()
	defer r.alloc.mu.Unlock()
	k := key(live)
	held, _ := r.alloc.book.Assigned(k)
	shown := statusAddresses(live)
	if sameAddrs(held.Addrs, shown) {
		return
	}
	r.alloc.book.Release(k)
	if len(shown) == 0 || !Owns(live, r.LBClass) {
		return
	}
	conflicts := r.alloc.book.Restore([]ipam.Claim{claimFor(r.alloc.cfg, live, nsLabels)})
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
	return eligiblePools(cfg, k.Namespace, nsLabels, svc.Labels)
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
