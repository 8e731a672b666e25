package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/internal/lbclass"
)

// startup is the startup barrier (invariant 3). It runs once per leader
// term, before any reconcile may allocate:
//
//  1. wait for the caches and for a valid configuration with at least one
//     pool (an empty one would clear every address);
//  2. register every assignment shown in Service status (Book.Restore),
//     under the terms recorded with it, resolving duplicates by age, never
//     by processing order; then every AddressReservation that has not
//     expired, for the addresses no Service shows (a reservation never
//     moves a holder; of two naming one address, the older keeps it);
//  3. judge every Service that kept its addresses under its current
//     request, oldest first: a request changed while the controller was
//     down is decided exactly as the running controller would have;
//  4. give the Services that show no address but whose allocation record
//     names some (recreated, or restored from a backup) those addresses
//     back, oldest first: a record is an assignment whose status was lost,
//     so it goes before anything that takes a fresh address. A record that
//     cannot be honoured is ignored, and its Service waits for step 6;
//  5. re-serve the Services that lost an address in step 2, oldest first;
//  6. serve the pending Services, those of step 4 whose record was
//     ignored among them, oldest first (one that a reservation names takes
//     the reserved addresses over);
//  7. open the gate for the reconcilers and the readiness check.
//
// "Oldest" is the creation timestamp, ties by namespace/name.
type startup struct {
	cache      cache.Cache
	services   *ServiceReconciler
	namespace  string
	pollPeriod time.Duration
	// settled is called once the barrier has opened.
	settled func()
}

var _ manager.LeaderElectionRunnable = (*startup)(nil)

// NeedLeaderElection makes a new leader run the barrier again.
func (s *startup) NeedLeaderElection() bool { return true }

func (s *startup) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("startup")
	begin := time.Now()
	if !s.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("startup barrier: caches did not sync")
	}
	cfg, err := s.waitForConfig(ctx)
	if err != nil {
		return err
	}
	owned, err := s.ownedServices(ctx)
	if err != nil {
		return err
	}
	lost, err := s.restore(ctx, cfg, owned)
	if err != nil {
		return err
	}
	reserved, err := s.loadReservations(ctx)
	if err != nil {
		return err
	}
	logger.Info("registered existing assignments", "services", len(owned), "lost", len(lost), "reservations", reserved,
		"after", time.Since(begin))
	steps := startupSteps(owned, lost)
	if err := serveSteps(steps, func(svc *corev1.Service, step Step) (bool, error) { return s.serveOne(ctx, svc, step) }); err != nil {
		return err
	}
	s.services.gate.openGate()
	close(s.services.barrier)
	logger.Info("startup barrier open", "kept", len(steps[StepKept]), "recalled", len(steps[StepRecalled]),
		"lost", len(steps[StepLost]), "pending", len(steps[StepPending]), "after", time.Since(begin))
	if s.settled != nil {
		s.settled()
	}
	return nil
}

// startupSteps orders the owned Services for the barrier's serving steps,
// indexed by Step: those that kept every address they show, the pending
// ones whose allocation record names addresses, those that lost one in
// Restore, and the other pending ones, each oldest first.
func startupSteps(owned, lost []*corev1.Service) [4][]*corev1.Service {
	kept, pending := splitByStatus(owned, lost)
	recalling, pending := splitByRecord(pending)
	return [4][]*corev1.Service{StepKept: kept, StepRecalled: recalling, StepLost: lost, StepPending: pending}
}

// splitByStatus separates the Services that kept every address they show
// from the pending ones (showing none); both keep the oldest-first order.
func splitByStatus(owned, lost []*corev1.Service) (kept, pending []*corev1.Service) {
	isLost := make(map[*corev1.Service]bool, len(lost))
	for _, svc := range lost {
		isLost[svc] = true
	}
	kept = make([]*corev1.Service, 0, len(owned)-len(lost))
	for _, svc := range owned {
		switch {
		case !showsAddress(svc):
			pending = append(pending, svc)
		case !isLost[svc]:
			kept = append(kept, svc)
		}
	}
	return kept, pending
}

// splitByRecord separates the pending Services whose allocation record
// names addresses from the others; both keep their order.
func splitByRecord(pending []*corev1.Service) (recalling, rest []*corev1.Service) {
	for _, svc := range pending {
		if hasRecall(svc) {
			recalling = append(recalling, svc)
		} else {
			rest = append(rest, svc)
		}
	}
	return recalling, rest
}

// serveSteps serves the Services of steps 3 to 6 in order. A Service of
// the recall step whose record cannot be honoured (another Service holds
// the addresses, or its pools no longer allow them) takes nothing there:
// serve reports false, and it is served with the pending Services, by age,
// as if it had no record. Otherwise it would take a fresh address before
// older pending Services.
func serveSteps(steps [4][]*corev1.Service, serve func(*corev1.Service, Step) (bool, error)) error {
	var deferred []*corev1.Service
	for i, svcs := range steps {
		step := Step(i)
		if step == StepPending {
			svcs = mergeOldestFirst(deferred, svcs)
		}
		for _, svc := range svcs {
			done, err := serve(svc, step)
			if err != nil {
				return err
			}
			if !done {
				deferred = append(deferred, svc)
			}
		}
	}
	return nil
}

// mergeOldestFirst merges two lists sorted oldest first.
func mergeOldestFirst(a, b []*corev1.Service) []*corev1.Service {
	out := make([]*corev1.Service, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if olderFirst(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// serveOne serves one Service in the barrier. A failure is logged and left
// to the reconciler, which retries once the gate is open; a cancelled
// context (SIGTERM, a lost Lease) stops the barrier at once.
func (s *startup) serveOne(ctx context.Context, svc *corev1.Service, step Step) (bool, error) {
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("startup barrier: %w", err)
	}
	decideFor := decide
	if step == StepRecalled {
		decideFor = decideRecall
	}
	done, err := s.services.serveWith(ctx, svc, decideFor)
	if err != nil {
		log.FromContext(ctx).Error(err, "serve during startup", "service", client.ObjectKeyFromObject(svc))
		return true, nil
	}
	if done {
		s.services.served.record(key(svc), svc.ResourceVersion)
	}
	return done, nil
}

// waitForConfig polls until the pools form a valid configuration. Until then
// nothing is allocated and nothing is cleared.
func (s *startup) waitForConfig(ctx context.Context) (*config.Config, error) {
	var cfg *config.Config
	err := wait.PollUntilContextCancel(ctx, s.pollPeriod, true, func(ctx context.Context) (bool, error) {
		pools, fingerprint, err := listPools(ctx, s.services.Client, s.namespace)
		if err == nil && len(pools) == 0 {
			err = errNoPools(s.namespace)
			if rerr := s.services.configReport.write(ctx, s.services.Client, s.namespace, err); rerr != nil {
				log.FromContext(ctx).Error(rerr, "report configuration state")
			}
		} else if err == nil {
			cfg, err = buildConfig(ctx, s.services, pools)
			s.services.alloc.fingerprint = fingerprint
		}
		if err != nil {
			log.FromContext(ctx).Info("waiting for a valid configuration with at least one pool; allocating and clearing nothing",
				"error", err.Error())
		}
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("startup barrier: wait for configuration: %w", err)
	}
	return cfg, nil
}

// ownedServices lists our Services, oldest first, ties by namespace/name.
func (s *startup) ownedServices(ctx context.Context) ([]*corev1.Service, error) {
	var list corev1.ServiceList
	if err := s.services.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("startup barrier: list services: %w", err)
	}
	return ownedOldestFirst(list.Items, s.services.LBClass), nil
}

// ownedOldestFirst picks our Services out of a list, oldest first, ties by
// namespace/name.
func ownedOldestFirst(items []corev1.Service, lbClass string) []*corev1.Service {
	owned := make([]*corev1.Service, 0, len(items))
	for i := range items {
		if lbclass.Owns(&items[i], lbClass) {
			owned = append(owned, &items[i])
		}
	}
	slices.SortFunc(owned, olderFirst)
	return owned
}

func olderFirst(a, b *corev1.Service) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// restore builds the book from every Service's status in one Restore call
// and returns the Services that lost an address, oldest first.
func (s *startup) restore(ctx context.Context, cfg *config.Config, owned []*corev1.Service) ([]*corev1.Service, error) {
	r, err := restoreBook(cfg, owned, func(ns string) (labels.Set, error) { return s.services.namespaceLabels(ctx, ns) })
	if err != nil {
		return nil, err
	}
	for _, c := range r.conflicts {
		log.FromContext(ctx).Info("assignment in status refused", "service", c.Service.String(), "address", c.Addr, "reason", c.Err.Error())
	}
	s.services.alloc.mu.Lock()
	s.services.alloc.book, s.services.alloc.cfg = r.book, cfg
	s.services.alloc.mu.Unlock()
	return r.lost, nil
}

// restored is step 2 of the barrier: the book with every assignment shown
// in status registered, what it refused, and the Services that lost an
// address, oldest first.
type restored struct {
	book      *ipam.Book
	conflicts []ipam.Conflict
	lost      []*corev1.Service
}

// restoreBook runs step 2 of the barrier. It only reads: the startup
// barrier and the read-only Replay both call it. nsLabels returns a
// namespace's labels.
func restoreBook(cfg *config.Config, owned []*corev1.Service, nsLabels func(string) (labels.Set, error)) (restored, error) {
	book, err := ipam.New(ipamPools(cfg))
	if err != nil {
		return restored{}, fmt.Errorf("startup barrier: build address book: %w", err)
	}
	// owned is oldest first, Restore's order, and names each Service
	// once: the claims go to the book one by one as they are made, and it
	// keeps their slices, which claimFor makes anew for each.
	var (
		claim     ipam.Claim
		labelsErr error
	)
	conflicts := book.RestoreSorted(len(owned), func(yield func(*ipam.Claim) bool) {
		for _, svc := range owned {
			shown := statusAddresses(svc)
			if len(shown) == 0 {
				continue
			}
			labels, err := nsLabels(svc.Namespace)
			if err != nil {
				labelsErr = err
				return
			}
			claim = claimOf(cfg, svc, labels, shown)
			if !yield(&claim) {
				return
			}
		}
	})
	if labelsErr != nil {
		return restored{}, labelsErr
	}
	r := restored{book: book, conflicts: conflicts}
	r.lost = servicesOf(owned, r.conflicts)
	return r, nil
}

// servicesOf picks the Services that conflicts name out of owned, in
// owned's order (oldest first). Conflicts are few, so the lookup is keyed
// by them rather than by every Service.
func servicesOf(owned []*corev1.Service, conflicts []ipam.Conflict) []*corev1.Service {
	if len(conflicts) == 0 {
		return nil
	}
	named := make(map[ipam.ServiceKey]bool, len(conflicts))
	for _, c := range conflicts {
		named[c.Service] = true
	}
	var out []*corev1.Service
	for _, svc := range owned {
		if named[key(svc)] {
			out = append(out, svc)
		}
	}
	return out
}

// loadReservations registers every AddressReservation that has not
// expired, after the Services: a reservation never moves a holder.
func (s *startup) loadReservations(ctx context.Context) (int, error) {
	var list v1alpha1.AddressReservationList
	if err := s.services.Client.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("startup barrier: list AddressReservations: %w", err)
	}
	alloc := s.services.alloc
	alloc.mu.Lock()
	defer alloc.mu.Unlock()
	alloc.registerReservations(list.Items, time.Now())
	return len(list.Items), nil
}
