package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// startup is the startup barrier (invariant 3). It runs once per leader
// term, before any reconcile may allocate:
//
//  1. wait for the caches and for a valid pool configuration;
//  2. register every assignment shown in Service status (Book.Restore),
//     resolving duplicates by age, never by processing order;
//  3. re-serve the Services that lost an address in step 2, oldest first;
//  4. serve the pending Services, oldest first;
//  5. open the gate for the reconcilers and the readiness check.
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
	logger.Info("registered existing assignments", "services", len(owned), "lost", len(lost), "after", time.Since(begin))
	var pending []*corev1.Service
	for _, svc := range owned {
		if len(statusAddresses(svc)) == 0 {
			pending = append(pending, svc)
		}
	}
	for _, svc := range append(lost, pending...) {
		if err := s.services.serve(ctx, svc); err != nil {
			// The reconciler retries it once the gate is open.
			logger.Error(err, "serve during startup", "service", client.ObjectKeyFromObject(svc))
		}
	}
	close(s.services.ready)
	logger.Info("startup barrier open", "lost", len(lost), "pending", len(pending), "after", time.Since(begin))
	if s.settled != nil {
		s.settled()
	}
	return nil
}

// waitForConfig polls until the pools form a valid configuration. Until then
// nothing is allocated and nothing is cleared.
func (s *startup) waitForConfig(ctx context.Context) (*config.Config, error) {
	var cfg *config.Config
	err := wait.PollUntilContextCancel(ctx, s.pollPeriod, true, func(ctx context.Context) (bool, error) {
		var err error
		cfg, s.services.alloc.fingerprint, err = loadConfig(ctx, s.services.Client, s.namespace)
		if err != nil {
			log.FromContext(ctx).Info("waiting for a valid configuration", "error", err.Error())
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
	var owned []*corev1.Service
	for i := range list.Items {
		if Owns(&list.Items[i], s.services.LBClass) {
			owned = append(owned, &list.Items[i])
		}
	}
	slices.SortFunc(owned, olderFirst)
	return owned, nil
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
	book, err := ipam.New(ipamPools(cfg))
	if err != nil {
		return nil, fmt.Errorf("startup barrier: build address book: %w", err)
	}
	var claims []ipam.Claim
	byKey := map[ipam.ServiceKey]*corev1.Service{}
	for _, svc := range owned {
		if len(statusAddresses(svc)) == 0 {
			continue
		}
		nsLabels, err := s.services.namespaceLabels(ctx, svc.Namespace)
		if err != nil {
			return nil, err
		}
		claims = append(claims, claimFor(cfg, svc, nsLabels))
		byKey[key(svc)] = svc
	}
	conflicts := book.Restore(claims)
	var lost []*corev1.Service
	seen := map[ipam.ServiceKey]bool{}
	for _, c := range conflicts {
		log.FromContext(ctx).Info("assignment in status refused", "service", c.Service.String(), "address", c.Addr, "reason", c.Err.Error())
		if !seen[c.Service] {
			seen[c.Service] = true
			lost = append(lost, byKey[c.Service])
		}
	}
	slices.SortFunc(lost, olderFirst)
	s.services.alloc.mu.Lock()
	s.services.alloc.book, s.services.alloc.cfg = book, cfg
	s.services.alloc.mu.Unlock()
	return lost, nil
}
