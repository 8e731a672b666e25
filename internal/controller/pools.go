package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/configstate"
)

// configurationStateName is the ConfigurationState the controller reports
// its verdict in, MetalLB's name.
const configurationStateName = "controller"

// allocator is where every decision is made, with what the pool
// reconciler remembers of the configuration beside it, under its lock.
type allocator struct {
	assign.Allocator
	// fingerprint identifies the pool objects the configuration was built
	// from.
	fingerprint string
	// refused is set while the pools in the API server make an invalid
	// configuration: going back to exactly the pools of the configuration
	// must still be reported, though the fingerprint is its own again.
	refused bool
}

func listPools(ctx context.Context, c client.Client, namespace string) ([]v1beta1.IPAddressPool, string, error) {
	var pools v1beta1.IPAddressPoolList
	if err := c.List(ctx, &pools, client.InNamespace(namespace)); err != nil {
		return nil, "", fmt.Errorf("list IPAddressPools in %s: %w", namespace, err)
	}
	return pools.Items, poolFingerprint(pools.Items), nil
}

// buildConfig builds the model and reports the verdict in the
// ConfigurationState. An invalid configuration is returned as an error and
// never used: the controller keeps running on the last valid one (MetalLB
// does the same), because dropping the bad pool would clear every address
// in it.
func buildConfig(ctx context.Context, r *ServiceReconciler, pools []v1beta1.IPAddressPool) (*config.Config, error) {
	cfg, buildErr := config.Build(config.Snapshot{Pools: pools})
	if err := r.configReport.write(ctx, r.Client, r.namespace, buildErr); err != nil {
		log.FromContext(ctx).Error(err, "report configuration state")
	}
	if buildErr != nil {
		configStale.Set(1)
		return nil, fmt.Errorf("invalid configuration: %w", buildErr)
	}
	configLoaded.Set(1)
	configStale.Set(0)
	return cfg, nil
}

// errNoPools is the verdict on an empty configuration: the controller
// waits, allocating and clearing nothing, until a pool exists.
func errNoPools(namespace string) error {
	return fmt.Errorf("no IPAddressPool exists in namespace %s: keeping every address and allocating nothing until one does", namespace)
}

func poolFingerprint(pools []v1beta1.IPAddressPool) string {
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = fmt.Sprintf("%s/%s/%d", p.Name, p.UID, p.Generation)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// configReport writes the ConfigurationState "controller" and remembers
// the verdict it last wrote. A verdict that differs from that one is
// patched whatever the cache shows: the cache may not hold the last write
// yet, and a stale copy equal to the new verdict would leave that write
// standing (an error that stays reported after it was fixed). Until the
// first write the cache decides, so a restart with nothing to change
// writes nothing.
type configReport struct {
	mu    sync.Mutex
	shown *v1beta1.ConfigurationStateStatus // result and summary only
}

func (c *configReport) write(ctx context.Context, cl client.Client, namespace string, buildErr error) error {
	want := v1beta1.ConfigurationStateStatus{Result: v1beta1.ConfigurationValid}
	if buildErr != nil {
		want.Result, want.ErrorSummary = v1beta1.ConfigurationInvalid, buildErr.Error()
	}
	configInvalid.Set(boolGauge(buildErr != nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown != nil && configstate.Same(*c.shown, want) {
		return nil
	}
	key := types.NamespacedName{Namespace: namespace, Name: configurationStateName}
	state, err := configstate.GetOrCreate(ctx, cl, cl, key, map[string]string{v1beta1.LabelComponentType: "controller"})
	if err != nil {
		return err
	}
	if c.shown == nil && configstate.Same(state.Status, want) {
		c.shown = &want
		return nil
	}
	if err := configstate.Patch(ctx, cl, key, want); err != nil {
		return err
	}
	c.shown = &want
	return nil
}

// writePoolStatus copies the book's counters into each pool's status and
// the allocator metrics. Pools whose status already matches are not
// written. Reserved addresses count as assigned there (MetalLB's status
// has no field for them, and nobody else may take them); the metric
// steadylb_allocator_addresses_reserved counts them apart.
func writePoolStatus(ctx context.Context, c client.Client, alloc *allocator, namespace string) error {
	alloc.Lock()
	stats := alloc.Book().AllStats()
	reserved := alloc.ReservedByPool()
	alloc.Unlock()
	publishStats(stats, reserved)
	var errs []error
	for _, s := range stats {
		pool := &v1beta1.IPAddressPool{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: s.Pool}, pool); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("get IPAddressPool %s: %w", s.Pool, err))
			}
			continue
		}
		want := v1beta1.IPAddressPoolStatus{
			AssignedIPv4: s.IPv4.Assigned.Int64(), AssignedIPv6: s.IPv6.Assigned.Int64(),
			AvailableIPv4: s.IPv4.Available.Int64(), AvailableIPv6: s.IPv6.Available.Int64(),
		}
		if pool.Status == want {
			continue
		}
		pool.Status = want
		if err := c.Status().Update(ctx, pool); err != nil {
			errs = append(errs, fmt.Errorf("update status of IPAddressPool %s: %w", s.Pool, err))
		}
	}
	return errors.Join(errs...)
}

// boolGauge is a gauge's value for a condition: 1 or 0.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
