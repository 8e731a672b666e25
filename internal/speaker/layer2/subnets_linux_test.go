package layer2

import (
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSystemLinksAddresses compares the addresses of the netlink dumps
// with what the standard library reads from the same namespace, and
// checks that every address's subnet is among its link's, unless it is a
// single host.
func TestSystemLinksAddresses(t *testing.T) {
	links, err := SystemLinks()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		ifi, err := net.InterfaceByIndex(l.Index)
		if err != nil {
			t.Fatal(err)
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			t.Fatal(err)
		}
		var want []netip.Addr
		for _, a := range addrs {
			p, err := netip.ParsePrefix(a.String())
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p.Addr())
			if !p.IsSingleIP() && !slices.Contains(l.Prefixes, p.Masked()) {
				t.Errorf("%s: subnet %s of %s not among %v", l.Name, p.Masked(), p.Addr(), l.Prefixes)
			}
		}
		got := slices.Clone(l.Addrs)
		slices.SortFunc(got, netip.Addr.Compare)
		slices.SortFunc(want, netip.Addr.Compare)
		if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
			t.Errorf("%s addresses (-net +SystemLinks):\n%s", l.Name, d)
		}
	}
}

// FuzzParseSubnets feeds arbitrary netlink dumps to the address, route and
// link-event parsers: none may panic, and no route may be a default or a
// single host, nor have no interface.
func FuzzParseSubnets(f *testing.F) {
	for _, kind := range []int{syscall.RTM_GETADDR, syscall.RTM_GETROUTE, syscall.RTM_GETLINK} {
		if b, err := syscall.NetlinkRIB(kind, syscall.AF_UNSPEC); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, dump []byte) {
		_, _ = parseAddrs(dump)
		routes, err := parseRoutes(dump)
		if err == nil {
			for _, r := range routes {
				if r.index == 0 || r.prefix.Bits() == 0 {
					t.Errorf("route %+v kept", r)
				}
			}
		}
		_, _, _ = parseLinkEvents(dump)
	})
}
