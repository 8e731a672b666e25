package wire

import (
	"errors"
	"fmt"
	"net"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// Errors the parsers return, matched with errors.Is. ErrOtherProtocol means
// a well-formed frame that is simply not what was asked for.
var (
	ErrMalformed     = errors.New("malformed frame")
	ErrOtherProtocol = errors.New("frame of another protocol")
)

// ARP field values for IPv4 over Ethernet, the only kind we speak.
const (
	arpHardwareEthernet = 1
	arpProtocolIPv4     = uint16(ethernet.EtherTypeIPv4)
	macLen              = 6
	ipv4Len             = 4
)

// ParseARP decodes an Ethernet frame carrying an ARP packet for IPv4 over
// Ethernet. Other hardware or protocol types are ErrOtherProtocol.
func ParseARP(frame []byte) (*arp.Packet, *ethernet.Frame, error) {
	eth := new(ethernet.Frame)
	if err := eth.UnmarshalBinary(frame); err != nil {
		return nil, nil, fmt.Errorf("ethernet header: %w: %v", ErrMalformed, err)
	}
	if eth.EtherType != ethernet.EtherTypeARP {
		return nil, nil, fmt.Errorf("ethertype %s: %w", eth.EtherType, ErrOtherProtocol)
	}
	p := new(arp.Packet)
	if err := p.UnmarshalBinary(eth.Payload); err != nil {
		return nil, nil, fmt.Errorf("arp packet: %w: %v", ErrMalformed, err)
	}
	if p.HardwareType != arpHardwareEthernet || p.ProtocolType != arpProtocolIPv4 ||
		p.HardwareAddrLength != macLen || p.IPLength != ipv4Len {
		return nil, nil, fmt.Errorf("arp for hardware %d protocol %#04x: %w", p.HardwareType, p.ProtocolType, ErrOtherProtocol)
	}
	return p, eth, nil
}

// MarshalARP frames p for the Ethernet destination dst, with p's sender
// hardware address as the Ethernet source.
func MarshalARP(p *arp.Packet, dst net.HardwareAddr) ([]byte, error) {
	body, err := p.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("marshal arp: %w", err)
	}
	eth := ethernet.Frame{
		Destination: dst,
		Source:      p.SenderHardwareAddr,
		EtherType:   ethernet.EtherTypeARP,
		Payload:     body,
	}
	frame, err := eth.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("marshal ethernet: %w", err)
	}
	return frame, nil
}

// IsUnicastMAC reports whether mac is a 6-byte address a reply may be sent
// to: not all zeros, not broadcast or multicast (group bit clear).
func IsUnicastMAC(mac net.HardwareAddr) bool {
	if len(mac) != macLen || mac[0]&1 != 0 {
		return false
	}
	for _, b := range mac {
		if b != 0 {
			return true
		}
	}
	return false
}
