package layer2

import (
	"net"
	"net/netip"

	"github.com/mdlayher/ndp"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

var _ codec = ndpCodec{}

// ndpCodec answers neighbor solicitations and announces with unsolicited
// neighbor advertisements (RFC 4861).
//
// Answers come from the target address itself, as Linux does for its own
// addresses, so a responder needs no link-local address of its own and its
// answer names the address it is about twice.
type ndpCodec struct{}

// question applies the receive checks of RFC 4861 §7.1.1 that wire.ParseNDP
// leaves to the message: the target is unicast, the destination is the
// target's solicited-node group or (unicast reachability probes) the target
// itself, and a solicitation from the unspecified address (duplicate
// address detection) goes to the group and carries no source link-layer
// option.
func (ndpCodec) question(frame []byte) (question, bool) {
	m, err := wire.ParseNDP(frame)
	if err != nil {
		return question{}, false
	}
	ns, ok := m.Message.(*ndp.NeighborSolicitation)
	if !ok || ns.TargetAddress.IsMulticast() || m.Source.IsMulticast() {
		return question{}, false
	}
	group, err := ndp.SolicitedNodeMulticast(ns.TargetAddress)
	if err != nil || (m.Destination != group && m.Destination != ns.TargetAddress) {
		return question{}, false
	}
	sourceMAC, hasSource := wire.LinkLayerAddress(ns.Options, ndp.Source)
	if m.Source.IsUnspecified() {
		if hasSource || m.Destination != group {
			return question{}, false
		}
		return question{target: ns.TargetAddress, senderIP: m.Source}, true
	}
	if !hasSource {
		sourceMAC = m.EthSource
	}
	if !wire.IsUnicastMAC(sourceMAC) {
		return question{}, false
	}
	return question{target: ns.TargetAddress, senderIP: m.Source, senderMAC: sourceMAC}, true
}

// answer is a solicited advertisement to the asker, or, for a duplicate
// address detection probe, an unsolicited one to all nodes (§7.2.4). The
// override flag is set: we hold the address, we are not a proxy.
func (ndpCodec) answer(mac net.HardwareAddr, q question) ([]byte, error) {
	if q.senderIP.IsUnspecified() {
		return advertisement(mac, q.target, wire.AllNodes, wire.MulticastMAC(wire.AllNodes), false)
	}
	return advertisement(mac, q.target, q.senderIP, q.senderMAC, true)
}

// announcements is one unsolicited advertisement to all nodes with the
// override flag, which makes every receiver replace its cached MAC
// (§7.2.6).
func (ndpCodec) announcements(mac net.HardwareAddr, addr netip.Addr) ([][]byte, error) {
	f, err := advertisement(mac, addr, wire.AllNodes, wire.MulticastMAC(wire.AllNodes), false)
	if err != nil {
		return nil, err
	}
	return [][]byte{f}, nil
}

func advertisement(mac net.HardwareAddr, target, dst netip.Addr, dstMAC net.HardwareAddr, solicited bool) ([]byte, error) {
	return wire.MarshalNDP(wire.NDP{
		EthSource:      mac,
		EthDestination: dstMAC,
		Source:         target,
		Destination:    dst,
		Message: &ndp.NeighborAdvertisement{
			Solicited:     solicited,
			Override:      true,
			TargetAddress: target,
			Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
		},
	})
}
