package assign

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// Allocator owns the address book and the pool configuration it was built
// from. Every decision happens under its lock, so decisions are made one
// at a time in the order the caller chooses: that, and a deterministic
// book, is what makes the startup order meaningful. Every method but
// Lock, Unlock and Restore expects the caller to hold the lock. The zero
// Allocator holds no book until Restore.
type Allocator struct {
	mu   sync.Mutex
	book *ipam.Book // nil until the startup barrier has run
	cfg  *config.Config
	// reserved are the AddressReservations; nil until the startup
	// barrier has loaded them.
	reserved *reservations
	// woken are reservations that freed addresses went to; the pool
	// reconciler, which every release wakes, has their status updated.
	woken []ipam.ServiceKey
	// reservedChanged is set when a stand-in took or gave up addresses:
	// the reason of a Service waiting for room (PoolExhaustedByReservations,
	// and how many addresses it counts) may read otherwise now.
	reservedChanged bool
	// readOnly is set for Replay, which writes nothing: decisions then
	// skip rendering the allocation record, which only a write carries.
	readOnly bool
	// read holds requests read before the decisions, by Service, for a
	// Replay that starts from a Prerestore: nil for the controller.
	read *requestReads
	// unchangedOnly is set on the allocator a read-only Replay decides
	// its leading run of kept Services with (keptUnchanged): it only
	// reads the book, and a decision that would change it comes back
	// deferred instead.
	unchangedOnly bool
}

// Lock takes the lock every decision is made under.
func (alloc *Allocator) Lock() { alloc.mu.Lock() }

// Unlock releases the lock.
func (alloc *Allocator) Unlock() { alloc.mu.Unlock() }

// Book is the address book, for the caller to read and change while it
// holds the lock: releases, settles and claims are the reconcilers' to
// make, from what the API server confirms.
func (alloc *Allocator) Book() *ipam.Book { return alloc.book }

// Reconfigure moves the book to a new configuration and, once the book
// accepts it, decides with it. eligible says which pools of cfg admit a
// Service; a reservation's stand-in may keep any pool.
func (alloc *Allocator) Reconfigure(cfg *config.Config, eligible func(ipam.ServiceKey) []string) (ipam.ReconfigureReport, error) {
	report, err := alloc.book.Reconfigure(ipamPools(cfg), func(k ipam.ServiceKey) []string {
		if isStandIn(k) {
			return poolNames(cfg)
		}
		return eligible(k)
	})
	if err == nil {
		alloc.cfg = cfg
	}
	return report, err
}

// TakeReservedChanged reports whether what reservations hold changed since
// the last call.
func (alloc *Allocator) TakeReservedChanged() bool {
	changed := alloc.reservedChanged
	alloc.reservedChanged = false
	return changed
}

// releaseStandIn frees what a reservation's stand-in holds. The caller
// holds alloc.mu.
func (alloc *Allocator) releaseStandIn(r *Reservation) (ipam.Assignment, bool) {
	a, ok := alloc.book.Release(r.StandIn())
	alloc.reservedChanged = alloc.reservedChanged || ok
	return a, ok
}

// ipamPools converts the configuration's pools for the address book.
func ipamPools(cfg *config.Config) []ipam.Pool {
	var out []ipam.Pool
	for _, p := range cfg.Pools() {
		ip := ipam.Pool{Name: p.Name(), AvoidBuggyIPs: p.AvoidBuggyIPs(), AutoAssign: p.AutoAssign()}
		for _, r := range p.Ranges() {
			ip.Ranges = append(ip.Ranges, r.Range)
		}
		if sa := p.ServiceAllocation(); sa != nil {
			ip.HasServiceAllocation, ip.Priority = true, sa.Priority()
		}
		out = append(out, ip)
	}
	return out
}

// EligiblePools lists the pools whose serviceAllocation admits a Service in
// a namespace with the given labels.
func EligiblePools(cfg *config.Config, namespace string, nsLabels, svcLabels labels.Set) []string {
	var out []string
	for p := range cfg.AllPools() {
		if p.Admits(namespace, nsLabels, svcLabels) {
			out = append(out, p.Name())
		}
	}
	return out
}
