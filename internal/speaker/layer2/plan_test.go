package layer2

import (
	"net"
	"net/netip"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A Kubernetes node as CNIs and kube-proxy leave it: the LAN on eth0
// (198.51.100.10/24) with a second LAN on eth1 (203.0.113.10/24), and every
// kind of interface a node grows that must never answer.
var (
	nodeAddr = netip.MustParseAddr("198.51.100.10")
	nodeLAN  = Link{Name: "eth0", Index: 2, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 2}, Flags: usableFlags,
		Addrs:    []netip.Addr{nodeAddr, netip.MustParseAddr("2001:db8:100::10")},
		Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:100::/64"), netip.MustParsePrefix("fe80::/64")}}
	otherLAN = Link{Name: "eth1", Index: 3, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 3}, Flags: usableFlags,
		Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.10")}, Prefixes: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}
	nodeLinks = []Link{
		lo, nodeLAN, otherLAN,
		// The CNI bridge and its pod ports.
		{Name: "cni0", Index: 10, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 10}, Flags: usableFlags,
			Addrs: []netip.Addr{netip.MustParseAddr("10.244.1.1")}, Prefixes: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fe80::/64")}},
		{Name: "veth1a2b3c4d", Index: 11, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 11}, Flags: usableFlags, MasterIndex: 10},
		// Calico and Cilium pod veths: not enslaved, a host route each.
		{Name: "cali12345", Index: 12, HardwareAddr: net.HardwareAddr{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}, Flags: usableFlags,
			Prefixes: []netip.Prefix{netip.MustParsePrefix("fe80::/64")}},
		{Name: "lxc9876", Index: 13, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 13}, Flags: usableFlags},
		{Name: "docker0", Index: 14, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 14}, Flags: usableFlags,
			Addrs: []netip.Addr{netip.MustParseAddr("172.17.0.1")}, Prefixes: []netip.Prefix{netip.MustParsePrefix("172.17.0.0/16")}},
		{Name: "flannel.1", Index: 15, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 15}, Flags: usableFlags,
			Addrs: []netip.Addr{netip.MustParseAddr("10.244.1.0")}},
		// kube-proxy's IPVS dummy holds the Service addresses themselves.
		{Name: "kube-ipvs0", Index: 16, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 16}, Flags: net.FlagUp | net.FlagBroadcast, NoARP: true,
			Addrs: []netip.Addr{netip.MustParseAddr("198.51.100.50"), netip.MustParseAddr("203.0.113.50")}},
		{Name: "nodelocaldns", Index: 17, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 17}, Flags: net.FlagUp | net.FlagBroadcast, NoARP: true,
			Addrs: []netip.Addr{netip.MustParseAddr("169.254.20.10")}},
		tun0,
	}
)

func TestMakePlanFacesTheLAN(t *testing.T) {
	tests := []struct {
		name string
		want map[string][]string
		sel  selection
		// answering per address; addresses answered nowhere are absent.
		wantAssign map[string][]string
	}{
		{
			name:       "an address on the node's subnet: the interface on it",
			want:       map[string][]string{"198.51.100.50": nil, "2001:db8:100::50": nil},
			sel:        selection{node: []netip.Addr{nodeAddr}},
			wantAssign: map[string][]string{"198.51.100.50": {"eth0"}, "2001:db8:100::50": {"eth0"}},
		},
		{
			name:       "an address on the second LAN: that LAN only",
			want:       map[string][]string{"203.0.113.50": nil},
			sel:        selection{node: []netip.Addr{nodeAddr}},
			wantAssign: map[string][]string{"203.0.113.50": {"eth1"}},
		},
		{
			name:       "an address on no subnet: where the node's address is",
			want:       map[string][]string{"192.0.2.50": nil, "2001:db8:ffff::50": nil},
			sel:        selection{node: []netip.Addr{nodeAddr}},
			wantAssign: map[string][]string{"192.0.2.50": {"eth0"}, "2001:db8:ffff::50": {"eth0"}},
		},
		{
			name: "an address on no subnet and no node address known: nowhere",
			want: map[string][]string{"192.0.2.50": nil},
		},
		{
			name:       "listed interfaces answer whatever their subnets",
			want:       map[string][]string{"198.51.100.50": {"eth1"}, "192.0.2.50": {"eth0", "eth1"}},
			wantAssign: map[string][]string{"198.51.100.50": {"eth1"}, "192.0.2.50": {"eth0", "eth1"}},
		},
		{
			name: "excluded interfaces never answer, listed or not",
			want: map[string][]string{"198.51.100.50": nil, "203.0.113.50": {"eth1", "eth0"}},
			sel:  selection{node: []netip.Addr{nodeAddr}, exclude: []*regexp.Regexp{regexp.MustCompile("^eth0$")}},
			// 198.51.100.50's subnet is only on eth0: nothing is left.
			wantAssign: map[string][]string{"203.0.113.50": {"eth1"}},
		},
		{
			name:       "an address inside a pod network is answered on its bridge, as its subnet says (pools must not overlap pod networks)",
			want:       map[string][]string{"10.244.1.77": nil},
			sel:        selection{node: []netip.Addr{nodeAddr}},
			wantAssign: map[string][]string{"10.244.1.77": {"cni0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[netip.Addr][]string{}
			for a, names := range tt.want {
				want[netip.MustParseAddr(a)] = names
			}
			p := makePlan(want, nodeLinks, tt.sel)
			got := map[string][]string{}
			for _, key := range p.keys() {
				for _, a := range p.assign[key] {
					got[a.String()] = append(got[a.String()], key.link)
				}
			}
			if d := cmp.Diff(tt.wantAssign, got, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
				t.Errorf("answering (-want +got):\n%s", d)
			}
		})
	}
}
