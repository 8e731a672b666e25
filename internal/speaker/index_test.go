package speaker

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestAddressIndex(t *testing.T) {
	web, dns := types.NamespacedName{Namespace: "a", Name: "web"}, types.NamespacedName{Namespace: "a", Name: "dns"}
	one, two := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	x := newAddressIndex()

	if old := x.set(web, []netip.Addr{one}); old != nil {
		t.Errorf("first set returned %v, want nothing", old)
	}
	x.set(dns, []netip.Addr{one, two})
	if diff := cmp.Diff([]types.NamespacedName{dns, web}, x.services(one)); diff != "" {
		t.Errorf("services sharing %s (-want +got):\n%s", one, diff)
	}
	if diff := cmp.Diff([]netip.Addr{one, two}, x.set(dns, []netip.Addr{two}), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("old addresses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]types.NamespacedName{web}, x.services(one)); diff != "" {
		t.Errorf("services on %s after dns left (-want +got):\n%s", one, diff)
	}
	x.set(web, nil)
	x.set(dns, nil)
	if len(x.byAddress) != 0 || len(x.byService) != 0 {
		t.Errorf("index not empty after every service left: %v %v", x.byAddress, x.byService)
	}
}
