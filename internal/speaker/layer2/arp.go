package layer2

import (
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

var _ codec = arpCodec{}

// arpCodec answers ARP requests (RFC 826) and announces with gratuitous
// ARP.
type arpCodec struct{}

var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// question accepts requests, including RFC 5227 probes (sender IP 0.0.0.0),
// which a holder must answer so the prober sees the address is taken. An
// announcement (sender IP = target IP) asks nothing and is ignored.
func (arpCodec) question(frame []byte) (question, bool) {
	p, _, err := wire.ParseARP(frame)
	if err != nil || p.Operation != arp.OperationRequest || p.SenderIP == p.TargetIP ||
		!wire.IsUnicastMAC(p.SenderHardwareAddr) {
		return question{}, false
	}
	return question{target: p.TargetIP, senderIP: p.SenderIP, senderMAC: p.SenderHardwareAddr}, true
}

// answer is addressed, at both layers, to the sender hardware address in
// the request, as RFC 826 says.
func (arpCodec) answer(mac net.HardwareAddr, q question) ([]byte, error) {
	p, err := arp.NewPacket(arp.OperationReply, mac, q.target, q.senderMAC, q.senderIP)
	if err != nil {
		return nil, err
	}
	return wire.MarshalARP(p, q.senderMAC)
}

// announcements are two broadcast frames: an RFC 5227 ARP announcement (a
// request with sender IP = target IP), which is what current stacks
// expect, and the same as a reply, which some older switches and routers
// only learn from. Linux updates an existing entry from either at once,
// even inside its one-second locktime, because sender equals target.
func (arpCodec) announcements(mac net.HardwareAddr, addr netip.Addr) ([][]byte, error) {
	request, err := arp.NewPacket(arp.OperationRequest, mac, addr, zeroMAC, addr)
	if err != nil {
		return nil, err
	}
	reply, err := arp.NewPacket(arp.OperationReply, mac, addr, ethernet.Broadcast, addr)
	if err != nil {
		return nil, err
	}
	frames := make([][]byte, 0, 2)
	for _, p := range []*arp.Packet{request, reply} {
		f, err := wire.MarshalARP(p, ethernet.Broadcast)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)
	}
	return frames, nil
}
