package layer2

import (
	"net"
	"net/netip"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"k8s.io/utils/clock"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

// idleResponder is a responder with no goroutines, for calling handle
// directly.
func idleResponder(l Link, p Protocol, conn FrameConn, addrs ...netip.Addr) *responder {
	m := newMetrics(logr.Discard(), nil)
	set := map[netip.Addr]*addrMetrics{}
	for _, a := range addrs {
		set[a] = m.forAddr(a)
	}
	return &responder{
		log: logr.Discard(), link: l, proto: p, conn: conn, codec: codecFor(p),
		clock: clock.RealClock{}, groups: map[netip.Addr]struct{}{}, wake: make(chan struct{}, 1),
		addrs: set,
	}
}

func arpFrom(t *testing.T, op arp.Operation, srcMAC net.HardwareAddr, srcIP, target netip.Addr) []byte {
	t.Helper()
	p, err := arp.NewPacket(op, srcMAC, srcIP, ethernet.Broadcast, target)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.MarshalARP(p, ethernet.Broadcast)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestARPAnswers(t *testing.T) {
	vip := netip.MustParseAddr("198.51.100.1")
	other := netip.MustParseAddr("198.51.100.2")
	reply := sent{Kind: "reply", Target: vip, MAC: macEth0.String(), To: macAsker.String(), ToIP: askerV4}
	tests := []struct {
		name  string
		frame []byte
		want  []sent
	}{
		{name: "request for an announced address", frame: arpRequest(t, vip), want: []sent{reply}},
		{name: "request for another address", frame: arpRequest(t, other)},
		{name: "reply for an announced address", frame: arpFrom(t, arp.OperationReply, macAsker, askerV4, vip)},
		{name: "another host's announcement", frame: arpFrom(t, arp.OperationRequest, macAsker, vip, vip)},
		{
			name:  "address conflict probe",
			frame: arpFrom(t, arp.OperationRequest, macAsker, netip.IPv4Unspecified(), vip),
			want:  []sent{{Kind: "reply", Target: vip, MAC: macEth0.String(), To: macAsker.String(), ToIP: netip.IPv4Unspecified()}},
		},
		{name: "request from our own MAC", frame: arpFrom(t, arp.OperationRequest, macEth0, askerV4, vip)},
		{name: "multicast sender", frame: arpFrom(t, arp.OperationRequest, net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}, askerV4, vip)},
		{name: "truncated", frame: arpRequest(t, vip)[:30]},
		{name: "solicitation", frame: solicit(t, netip.MustParseAddr("2001:db8::1"))},
		{name: "empty", frame: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := newFakeConn()
			r := idleResponder(eth0, ARP, conn, vip)
			r.handle(tt.frame)
			if d := cmp.Diff(tt.want, decodeAll(t, conn.written()), addrCmp); d != "" {
				t.Errorf("frames sent (-want +got):\n%s", d)
			}
		})
	}
}

func TestNDPAnswers(t *testing.T) {
	vip := netip.MustParseAddr("2001:db8::1")
	other := netip.MustParseAddr("2001:db8::2")
	group, _ := ndp.SolicitedNodeMulticast(vip)
	reply := sent{Kind: "reply", Target: vip, MAC: macEth0.String(), To: macAsker.String(), ToIP: askerV6}
	frame := func(src, dst netip.Addr, ethDst net.HardwareAddr, m ndp.Message) []byte {
		f, err := wire.MarshalNDP(wire.NDP{EthSource: macAsker, EthDestination: ethDst, Source: src, Destination: dst, Message: m})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	withSource := []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: macAsker}}
	hopLimit64 := solicit(t, vip)
	hopLimit64[14+7] = 64
	badSum := solicit(t, vip)
	badSum[len(badSum)-1] ^= 1
	tests := []struct {
		name  string
		frame []byte
		want  []sent
	}{
		{name: "solicitation for an announced address", frame: solicit(t, vip), want: []sent{reply}},
		{name: "solicitation for another address", frame: solicit(t, other)},
		{name: "without a source link-layer option", frame: solicitFrom(t, askerV6, vip, false), want: []sent{reply}},
		{
			name:  "duplicate address detection",
			frame: solicitFrom(t, netip.IPv6Unspecified(), vip, false),
			want:  []sent{{Kind: "announce", Target: vip, MAC: macEth0.String(), To: "33:33:00:00:00:01", ToIP: wire.AllNodes}},
		},
		{name: "duplicate address detection with a source option", frame: solicitFrom(t, netip.IPv6Unspecified(), vip, true)},
		{
			name:  "unicast reachability probe",
			frame: frame(askerV6, vip, macEth0, &ndp.NeighborSolicitation{TargetAddress: vip, Options: withSource}),
			want:  []sent{reply},
		},
		{
			name:  "sent to another group",
			frame: frame(askerV6, netip.MustParseAddr("ff02::1:ff00:9"), wire.MulticastMAC(netip.MustParseAddr("ff02::1:ff00:9")), &ndp.NeighborSolicitation{TargetAddress: vip, Options: withSource}),
		},
		{name: "from a multicast address", frame: frame(netip.MustParseAddr("ff02::1"), group, wire.MulticastMAC(group), &ndp.NeighborSolicitation{TargetAddress: vip})},
		{name: "advertisement", frame: frame(askerV6, wire.AllNodes, wire.MulticastMAC(wire.AllNodes), &ndp.NeighborAdvertisement{Override: true, TargetAddress: vip})},
		{name: "hop limit 64", frame: hopLimit64},
		{name: "bad checksum", frame: badSum},
		{name: "truncated", frame: solicit(t, vip)[:60]},
		{name: "arp request", frame: arpRequest(t, netip.MustParseAddr("198.51.100.1"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := newFakeConn()
			r := idleResponder(eth0, NDP, conn, vip)
			r.handle(tt.frame)
			if d := cmp.Diff(tt.want, decodeAll(t, conn.written()), addrCmp); d != "" {
				t.Errorf("frames sent (-want +got):\n%s", d)
			}
		})
	}
}

func TestSetJoinsSolicitedNodeGroups(t *testing.T) {
	conn := newFakeConn()
	r := idleResponder(eth0, NDP, conn)
	m := newMetrics(logr.Discard(), nil)
	set := func(addrs ...string) {
		s := map[netip.Addr]*addrMetrics{}
		for _, a := range addrs {
			ip := netip.MustParseAddr(a)
			s[ip] = m.forAddr(ip)
		}
		r.set(s)
	}
	steps := []struct {
		addrs []string
		want  []string
	}{
		{addrs: []string{"2001:db8::1", "2001:db8::2"}, want: []string{"ff02::1:ff00:1", "ff02::1:ff00:2"}},
		// Addresses equal in their last 24 bits share a group.
		{addrs: []string{"2001:db8::1", "2001:db8:0:1::1"}, want: []string{"ff02::1:ff00:1"}},
		{addrs: []string{"2001:db8:0:1::1"}, want: []string{"ff02::1:ff00:1"}},
		{addrs: nil, want: nil},
	}
	for i, s := range steps {
		set(s.addrs...)
		var got []string
		for _, g := range conn.joined() {
			got = append(got, g.String())
		}
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("step %d: groups (-want +got):\n%s", i, d)
		}
	}
}
