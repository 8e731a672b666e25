package l2probe

import (
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

var (
	macProbe = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	macNode  = net.HardwareAddr{2, 0, 0, 0, 0, 2}
	probeV4  = netip.MustParseAddr("198.51.100.100")
	probeV6  = netip.MustParseAddr("fe80::1")
	vip4     = netip.MustParseAddr("198.51.100.1")
	vip6     = netip.MustParseAddr("2001:db8::1")
)

func testProber(srcV6 netip.Addr) *Prober {
	return &Prober{ifi: &net.Interface{Name: "eth0", HardwareAddr: macProbe}, srcV4: probeV4, srcV6: srcV6}
}

func arpFrame(t testing.TB, op arp.Operation, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
	t.Helper()
	p, err := arp.NewPacket(op, macNode, spa, tha, tpa)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.MarshalARP(p, tha)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func naFrame(t testing.TB, dst netip.Addr, solicited bool, target netip.Addr, withTarget bool) []byte {
	t.Helper()
	na := &ndp.NeighborAdvertisement{Solicited: solicited, Override: true, TargetAddress: target}
	if withTarget {
		na.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: macNode}}
	}
	f, err := wire.MarshalNDP(wire.NDP{EthSource: macNode, EthDestination: macProbe, Source: target, Destination: dst, Message: na})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestAnswerMatching(t *testing.T) {
	p, dad := testProber(probeV6), testProber(netip.IPv6Unspecified())
	tests := []struct {
		name   string
		prober *Prober
		target netip.Addr
		frame  []byte
		want   bool
	}{
		{"arp reply to us", p, vip4, arpFrame(t, arp.OperationReply, vip4, macProbe, probeV4), true},
		{"arp reply for another address", p, vip4, arpFrame(t, arp.OperationReply, netip.MustParseAddr("198.51.100.2"), macProbe, probeV4), false},
		{"arp reply to someone else", p, vip4, arpFrame(t, arp.OperationReply, vip4, macNode, probeV4), false},
		{"gratuitous arp reply", p, vip4, arpFrame(t, arp.OperationReply, vip4, ethernet.Broadcast, vip4), false},
		{"arp request", p, vip4, arpFrame(t, arp.OperationRequest, vip4, macProbe, probeV4), false},
		{"solicited advertisement to us", p, vip6, naFrame(t, probeV6, true, vip6, true), true},
		{"without target option", p, vip6, naFrame(t, probeV6, true, vip6, false), true},
		{"unsolicited advertisement", p, vip6, naFrame(t, wire.AllNodes, false, vip6, true), false},
		{"advertisement to someone else", p, vip6, naFrame(t, netip.MustParseAddr("fe80::9"), true, vip6, true), false},
		{"advertisement for another address", p, vip6, naFrame(t, probeV6, true, netip.MustParseAddr("2001:db8::2"), true), false},
		{"asked from ::, multicast answer", dad, vip6, naFrame(t, wire.AllNodes, false, vip6, true), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mac net.HardwareAddr
			var ok bool
			if tt.target.Is4() {
				mac, ok = tt.prober.arpAnswer(tt.frame, tt.target)
			} else {
				mac, ok = tt.prober.ndpAnswer(tt.frame, tt.target)
			}
			if ok != tt.want {
				t.Fatalf("matched = %v, want %v", ok, tt.want)
			}
			if ok && mac.String() != macNode.String() {
				t.Errorf("MAC = %s, want %s", mac, macNode)
			}
		})
	}
}

func TestAnnouncementMatching(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  *Announcement
	}{
		{"gratuitous request", arpFrame(t, arp.OperationRequest, vip4, ethernet.Broadcast, vip4), &Announcement{Addr: vip4, MAC: macNode, Protocol: "arp"}},
		{"gratuitous reply", arpFrame(t, arp.OperationReply, vip4, ethernet.Broadcast, vip4), &Announcement{Addr: vip4, MAC: macNode, Protocol: "arp"}},
		{"ordinary request", arpFrame(t, arp.OperationRequest, probeV4, ethernet.Broadcast, vip4), nil},
		{"probe for 0.0.0.0", arpFrame(t, arp.OperationRequest, netip.IPv4Unspecified(), ethernet.Broadcast, netip.IPv4Unspecified()), nil},
		{"unsolicited advertisement", naFrame(t, wire.AllNodes, false, vip6, true), &Announcement{Addr: vip6, MAC: macNode, Protocol: "ndp"}},
		{"solicited advertisement", naFrame(t, probeV6, true, vip6, true), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := arpAnnouncement(tt.frame)
			if !ok {
				a, ok = ndpAnnouncement(tt.frame)
			}
			var got *Announcement
			if ok {
				got = &a
			}
			if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("announcement (-want +got):\n%s", d)
			}
		})
	}
}

// FuzzDecoders feeds arbitrary frames to every matcher of the package.
func FuzzDecoders(f *testing.F) {
	f.Add(arpFrame(f, arp.OperationReply, vip4, macProbe, probeV4))
	f.Add(naFrame(f, probeV6, true, vip6, true))
	f.Add([]byte{})
	p, dad := testProber(probeV6), testProber(netip.IPv6Unspecified())
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, pr := range []*Prober{p, dad} {
			pr.arpAnswer(frame, vip4)
			pr.ndpAnswer(frame, vip6)
		}
		arpAnnouncement(frame)
		ndpAnnouncement(frame)
	})
}
