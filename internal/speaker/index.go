package speaker

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// addressIndex maps our Services to the addresses their status shows and
// back, so that a change to one Service revisits only its own addresses and
// the Services sharing them (invariant 10). Only the loop goroutine uses
// it.
type addressIndex struct {
	byService map[types.NamespacedName][]netip.Addr
	byAddress map[netip.Addr]map[types.NamespacedName]bool
}

func newAddressIndex() addressIndex {
	return addressIndex{byService: map[types.NamespacedName][]netip.Addr{}, byAddress: map[netip.Addr]map[types.NamespacedName]bool{}}
}

// set records a Service's addresses (none: forget it) and returns the
// ones it had. O(addresses of the Service).
func (x *addressIndex) set(svc types.NamespacedName, addrs []netip.Addr) (old []netip.Addr) {
	old = x.byService[svc]
	for _, a := range old {
		delete(x.byAddress[a], svc)
		if len(x.byAddress[a]) == 0 {
			delete(x.byAddress, a)
		}
	}
	if len(addrs) == 0 {
		delete(x.byService, svc)
		return old
	}
	x.byService[svc] = addrs
	for _, a := range addrs {
		if x.byAddress[a] == nil {
			x.byAddress[a] = map[types.NamespacedName]bool{}
		}
		x.byAddress[a][svc] = true
	}
	return old
}

// addresses of a Service, sorted.
func (x *addressIndex) addresses(svc types.NamespacedName) []netip.Addr { return x.byService[svc] }

// services showing an address, sorted.
func (x *addressIndex) services(a netip.Addr) []types.NamespacedName {
	return slices.SortedFunc(maps.Keys(x.byAddress[a]), compareKeys)
}

// keys are every indexed Service.
func (x *addressIndex) keys() []types.NamespacedName {
	return slices.Collect(maps.Keys(x.byService))
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
