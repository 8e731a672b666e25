package controller

import (
	"net/netip"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// allocator owns the address book and the pool configuration it was built
// from. Every decision happens under its mutex, so decisions are made one
// at a time in the order the caller chooses: that, and a deterministic
// book, is what makes the startup order meaningful.
type allocator struct {
	mu   sync.Mutex
	book *ipam.Book // nil until the startup barrier has run
	cfg  *config.Config
	// fingerprint identifies the pool objects cfg was built from.
	fingerprint string
	// refused is set while the pools in the API server make an invalid
	// configuration: going back to exactly the pools of cfg must still be
	// reported, though the fingerprint is cfg's again.
	refused bool
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
}

// takeReservedChanged reports whether what reservations hold changed since
// the last call. The caller holds mu.
func (alloc *allocator) takeReservedChanged() bool {
	changed := alloc.reservedChanged
	alloc.reservedChanged = false
	return changed
}

// releaseStandIn frees what a reservation's stand-in holds. The caller
// holds mu.
func (alloc *allocator) releaseStandIn(r *reservation) (ipam.Assignment, bool) {
	a, ok := alloc.book.Release(r.standIn())
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

// eligiblePools lists the pools whose serviceAllocation admits a Service in
// a namespace with the given labels.
func eligiblePools(cfg *config.Config, namespace string, nsLabels, svcLabels labels.Set) []string {
	var out []string
	for p := range cfg.AllPools() {
		if p.Admits(namespace, nsLabels, svcLabels) {
			out = append(out, p.Name())
		}
	}
	return out
}

func sameAddrs(a, b []netip.Addr) bool {
	return slices.Equal(a, b)
}
