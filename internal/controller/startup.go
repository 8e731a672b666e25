package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/config"
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
	steps := assign.StartupSteps(owned, lost)
	if err := assign.ServeSteps(steps, func(svc *corev1.Service, step assign.Step) (bool, error) { return s.serveOne(ctx, svc, step) }); err != nil {
		return err
	}
	s.services.gate.openGate()
	close(s.services.barrier)
	logger.Info("startup barrier open", "kept", len(steps[assign.StepKept]), "recalled", len(steps[assign.StepRecalled]),
		"lost", len(steps[assign.StepLost]), "pending", len(steps[assign.StepPending]), "after", time.Since(begin))
	if s.settled != nil {
		s.settled()
	}
	return nil
}

// serveOne serves one Service in the barrier. A failure is logged and left
// to the reconciler, which retries once the gate is open; a cancelled
// context (SIGTERM, a lost Lease) stops the barrier at once.
func (s *startup) serveOne(ctx context.Context, svc *corev1.Service, step assign.Step) (bool, error) {
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("startup barrier: %w", err)
	}
	done, err := s.services.serveWith(ctx, svc, assign.DeciderFor(step))
	if err != nil {
		log.FromContext(ctx).Error(err, "serve during startup", "service", client.ObjectKeyFromObject(svc))
		return true, nil
	}
	if done {
		s.services.served.record(assign.Key(svc), svc.ResourceVersion)
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
	return assign.OwnedOldestFirst(list.Items, s.services.LBClass), nil
}

// restore builds the book from every Service's status in one Restore call
// and returns the Services that lost an address, oldest first.
func (s *startup) restore(ctx context.Context, cfg *config.Config, owned []*corev1.Service) ([]*corev1.Service, error) {
	conflicts, lost, err := s.services.alloc.Restore(cfg, owned,
		func(ns string) (labels.Set, error) { return s.services.namespaceLabels(ctx, ns) })
	if err != nil {
		return nil, err
	}
	for _, c := range conflicts {
		log.FromContext(ctx).Info("assignment in status refused", "service", c.Service.String(), "address", c.Addr, "reason", c.Err.Error())
	}
	return lost, nil
}

// loadReservations registers every AddressReservation that has not
// expired, after the Services: a reservation never moves a holder.
func (s *startup) loadReservations(ctx context.Context) (int, error) {
	var list v1alpha1.AddressReservationList
	if err := s.services.Client.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("startup barrier: list AddressReservations: %w", err)
	}
	alloc := s.services.alloc
	alloc.Lock()
	defer alloc.Unlock()
	alloc.RegisterReservations(list.Items, time.Now())
	return len(list.Items), nil
}
