package wire

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/bpf"
	"golang.org/x/net/ipv6"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
	ip4A = netip.MustParseAddr("198.51.100.10")
	ip4B = netip.MustParseAddr("198.51.100.20")
	ip6A = netip.MustParseAddr("2001:db8::a")
	ll6B = netip.MustParseAddr("fe80::b")

	addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
)

func arpFrame(t testing.TB, op arp.Operation, dst net.HardwareAddr) []byte {
	t.Helper()
	p, err := arp.NewPacket(op, macB, ip4B, ethernet.Broadcast, ip4A)
	if err != nil {
		t.Fatal(err)
	}
	f, err := MarshalARP(p, dst)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func solicitation(t testing.TB) []byte {
	t.Helper()
	group, err := ndp.SolicitedNodeMulticast(ip6A)
	if err != nil {
		t.Fatal(err)
	}
	f, err := MarshalNDP(NDP{
		EthSource:      macB,
		EthDestination: MulticastMAC(group),
		Source:         ll6B,
		Destination:    group,
		Message: &ndp.NeighborSolicitation{
			TargetAddress: ip6A,
			Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: macB}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParseARP(t *testing.T) {
	request := arpFrame(t, arp.OperationRequest, ethernet.Broadcast)
	withByte := func(i int, b byte) []byte {
		f := append([]byte(nil), request...)
		f[i] = b
		return f
	}
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{name: "request", frame: request},
		{name: "truncated ethernet", frame: request[:10], want: ErrMalformed},
		{name: "truncated arp", frame: request[:14+20], want: ErrMalformed},
		{name: "ipv6 ethertype", frame: withByte(13, 0xdd), want: ErrOtherProtocol},
		{name: "token ring hardware", frame: withByte(15, 6), want: ErrOtherProtocol},
		{name: "protocol not ipv4", frame: withByte(16, 0x86), want: ErrOtherProtocol},
		{name: "hardware length 8", frame: withByte(18, 8), want: ErrOtherProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, eth, err := ParseARP(tt.frame)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("ParseARP error = %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			got := []any{p.Operation, p.SenderHardwareAddr, p.SenderIP, p.TargetIP, eth.Destination}
			want := []any{arp.OperationRequest, macB, ip4B, ip4A, ethernet.Broadcast}
			if d := cmp.Diff(want, got, addrCmp); d != "" {
				t.Errorf("parsed (-want +got):\n%s", d)
			}
		})
	}
}

func TestNDPRoundTrip(t *testing.T) {
	messages := []NDP{
		{
			EthSource: macB, EthDestination: MulticastMAC(netip.MustParseAddr("ff02::1:ff00:a")),
			Source: ll6B, Destination: netip.MustParseAddr("ff02::1:ff00:a"),
			Message: &ndp.NeighborSolicitation{
				TargetAddress: ip6A,
				Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: macB}},
			},
		},
		{
			EthSource: macA, EthDestination: MulticastMAC(AllNodes),
			Source: ip6A, Destination: AllNodes,
			Message: &ndp.NeighborAdvertisement{
				Override: true, TargetAddress: ip6A,
				Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: macA}},
			},
		},
	}
	for _, m := range messages {
		t.Run(m.Message.Type().String(), func(t *testing.T) {
			frame, err := MarshalNDP(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseNDP(frame)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(m, got, addrCmp); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
			// Ethernet pads short frames; the IPv6 length says where the
			// packet ends.
			if _, err := ParseNDP(append(frame, 0, 0, 0, 0)); err != nil {
				t.Errorf("padded frame: %v", err)
			}
		})
	}
}

func TestParseNDPRejects(t *testing.T) {
	ns := solicitation(t)
	const ip = 14 // start of the IPv6 header
	with := func(change func(f []byte) []byte) []byte {
		return change(append([]byte(nil), ns...))
	}
	// resum rewrites the ICMPv6 checksum, so a change reaches the check
	// after it.
	resum := func(f []byte) []byte {
		body := f[ip+40:]
		body[2], body[3] = 0, 0
		src, dst := netip.AddrFrom16([16]byte(f[ip+8:ip+24])), netip.AddrFrom16([16]byte(f[ip+24:ip+40]))
		sum := icmpv6Checksum(src, dst, body)
		body[2], body[3] = byte(sum>>8), byte(sum)
		return f
	}
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{name: "ipv4 ethertype", frame: with(func(f []byte) []byte { f[12], f[13] = 0x08, 0x00; return f }), want: ErrOtherProtocol},
		{name: "short ipv6 header", frame: ns[:ip+30], want: ErrMalformed},
		{name: "version 4", frame: with(func(f []byte) []byte { f[ip] = 0x45; return f }), want: ErrMalformed},
		{name: "udp", frame: with(func(f []byte) []byte { f[ip+6] = 17; return f }), want: ErrOtherProtocol},
		{name: "hop limit 64", frame: with(func(f []byte) []byte { f[ip+7] = 64; return f }), want: ErrMalformed},
		{name: "payload length past the frame", frame: ns[:len(ns)-1], want: ErrMalformed},
		{name: "payload length below icmp header", frame: with(func(f []byte) []byte { f[ip+4], f[ip+5] = 0, 3; return f }), want: ErrMalformed},
		{name: "bad checksum", frame: with(func(f []byte) []byte { f[len(f)-1] ^= 0xff; return f }), want: ErrMalformed},
		{name: "code 1", frame: with(func(f []byte) []byte { f[ip+41] = 1; return resum(f) }), want: ErrMalformed},
		{name: "echo request", frame: with(func(f []byte) []byte { f[ip+40] = 128; return resum(f) }), want: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseNDP(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseNDP error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	request := arpFrame(t, arp.OperationRequest, ethernet.Broadcast)
	reply := arpFrame(t, arp.OperationReply, macA)
	ns := solicitation(t)
	na, err := MarshalNDP(NDP{
		EthSource: macA, EthDestination: macB, Source: ip6A, Destination: ll6B,
		Message: &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: ip6A},
	})
	if err != nil {
		t.Fatal(err)
	}
	udp := append([]byte(nil), ns...)
	udp[14+6] = 17
	frames := map[string][]byte{"arp request": request, "arp reply": reply, "ns": ns, "na": na, "udp6": udp, "runt": ns[:16]}
	tests := []struct {
		name   string
		filter []bpf.Instruction
		passes []string
	}{
		{name: "arp requests", filter: ARPFilter(arp.OperationRequest), passes: []string{"arp request"}},
		{name: "arp replies", filter: ARPFilter(arp.OperationReply), passes: []string{"arp reply"}},
		{name: "any arp", filter: AnyARPFilter(), passes: []string{"arp reply", "arp request"}},
		{name: "solicitations", filter: NDPFilter(ipv6.ICMPTypeNeighborSolicitation), passes: []string{"ns"}},
		{name: "advertisements", filter: NDPFilter(ipv6.ICMPTypeNeighborAdvertisement), passes: []string{"na"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm, err := bpf.NewVM(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var passed []string
			for _, name := range []string{"arp reply", "arp request", "na", "ns", "runt", "udp6"} {
				n, err := vm.Run(frames[name])
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if n > 0 {
					passed = append(passed, name)
				}
			}
			if d := cmp.Diff(tt.passes, passed); d != "" {
				t.Errorf("frames passed (-want +got):\n%s", d)
			}
		})
	}
}

func TestMACs(t *testing.T) {
	if got, want := MulticastMAC(netip.MustParseAddr("ff02::1:ff12:3456")), (net.HardwareAddr{0x33, 0x33, 0xff, 0x12, 0x34, 0x56}); !cmp.Equal(got, want) {
		t.Errorf("MulticastMAC = %s, want %s", got, want)
	}
	tests := map[string]bool{
		"02:00:00:00:00:0a": true,
		"00:00:00:00:00:00": false,
		"ff:ff:ff:ff:ff:ff": false,
		"33:33:00:00:00:01": false,
		"01:00:5e:00:00:01": false,
	}
	for s, want := range tests {
		mac, _ := net.ParseMAC(s)
		if got := IsUnicastMAC(mac); got != want {
			t.Errorf("IsUnicastMAC(%s) = %v, want %v", s, got, want)
		}
	}
	if IsUnicastMAC(net.HardwareAddr{2, 0, 0, 0}) {
		t.Error("IsUnicastMAC accepted a 4-byte address")
	}
}
