package wire

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

const (
	ipv6HeaderLen = 40
	nextICMPv6    = 58
	icmpHeaderLen = 4
)

// AllNodes is the link-local all-nodes group, where unsolicited neighbor
// advertisements go (RFC 4861 §7.2.6).
var AllNodes = netip.AddrFrom16([16]byte{0: 0xff, 1: 0x02, 15: 0x01})

// NDP is one neighbor discovery message with the Ethernet and IPv6 headers
// it travels in. The hop limit is always 255 (RFC 4861 §7.1): ParseNDP
// rejects anything else and MarshalNDP writes nothing else.
type NDP struct {
	EthSource      net.HardwareAddr
	EthDestination net.HardwareAddr
	Source         netip.Addr
	Destination    netip.Addr
	Message        ndp.Message
}

// ParseNDP decodes an Ethernet frame carrying an IPv6 packet whose only
// header is ICMPv6 with a neighbor discovery message. It checks what a
// receiving kernel would: IPv6 version, a payload that fits, hop limit 255,
// the ICMPv6 checksum and code 0. Other IPv6 traffic is ErrOtherProtocol;
// trailing bytes after the IPv6 payload (Ethernet padding) are ignored.
func ParseNDP(frame []byte) (NDP, error) {
	var eth ethernet.Frame
	if err := eth.UnmarshalBinary(frame); err != nil {
		return NDP{}, fmt.Errorf("ethernet header: %w: %v", ErrMalformed, err)
	}
	if eth.EtherType != ethernet.EtherTypeIPv6 {
		return NDP{}, fmt.Errorf("ethertype %s: %w", eth.EtherType, ErrOtherProtocol)
	}
	src, dst, body, err := parseIPv6ICMP(eth.Payload)
	if err != nil {
		return NDP{}, err
	}
	msg, err := ndp.ParseMessage(body)
	if err != nil {
		return NDP{}, fmt.Errorf("icmpv6 type %d: %w: %v", body[0], ErrMalformed, err)
	}
	return NDP{
		EthSource:      eth.Source,
		EthDestination: eth.Destination,
		Source:         src,
		Destination:    dst,
		Message:        msg,
	}, nil
}

// parseIPv6ICMP checks the fixed IPv6 header and returns the ICMPv6
// message it carries, checksum verified. NDP never uses extension headers
// in practice, so a packet with any is ErrOtherProtocol rather than being
// walked.
func parseIPv6ICMP(p []byte) (src, dst netip.Addr, body []byte, err error) {
	if len(p) < ipv6HeaderLen {
		return src, dst, nil, fmt.Errorf("ipv6 header of %d bytes: %w", len(p), ErrMalformed)
	}
	if p[0]>>4 != 6 {
		return src, dst, nil, fmt.Errorf("ip version %d: %w", p[0]>>4, ErrMalformed)
	}
	if p[6] != nextICMPv6 {
		return src, dst, nil, fmt.Errorf("ipv6 next header %d: %w", p[6], ErrOtherProtocol)
	}
	if p[7] != ndp.HopLimit {
		return src, dst, nil, fmt.Errorf("hop limit %d, neighbor discovery needs %d: %w", p[7], ndp.HopLimit, ErrMalformed)
	}
	length := int(binary.BigEndian.Uint16(p[4:6]))
	if length < icmpHeaderLen || ipv6HeaderLen+length > len(p) {
		return src, dst, nil, fmt.Errorf("ipv6 payload length %d of %d bytes: %w", length, len(p)-ipv6HeaderLen, ErrMalformed)
	}
	src = netip.AddrFrom16([16]byte(p[8:24]))
	dst = netip.AddrFrom16([16]byte(p[24:40]))
	body = p[ipv6HeaderLen : ipv6HeaderLen+length]
	if sum := icmpv6Checksum(src, dst, body); sum != 0 {
		return src, dst, nil, fmt.Errorf("icmpv6 checksum off by %#04x: %w", sum, ErrMalformed)
	}
	if body[1] != 0 {
		return src, dst, nil, fmt.Errorf("icmpv6 code %d: %w", body[1], ErrMalformed)
	}
	return src, dst, body, nil
}

// icmpv6Checksum is the one's complement sum of the IPv6 pseudo-header
// (RFC 8200 §8.1) and msg, complemented: 0 when msg's checksum field is
// right.
func icmpv6Checksum(src, dst netip.Addr, msg []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for len(b) >= 2 {
			sum += uint32(b[0])<<8 | uint32(b[1])
			b = b[2:]
		}
		if len(b) == 1 {
			sum += uint32(b[0]) << 8
		}
	}
	s, d := src.As16(), dst.As16()
	add(s[:])
	add(d[:])
	var lengths [8]byte
	binary.BigEndian.PutUint32(lengths[0:4], uint32(len(msg)))
	lengths[7] = nextICMPv6
	add(lengths[:])
	add(msg)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// MarshalNDP frames f.Message in IPv6 (hop limit 255, checksum filled in)
// and Ethernet.
func MarshalNDP(f NDP) ([]byte, error) {
	if !f.Source.Is6() || !f.Destination.Is6() {
		return nil, fmt.Errorf("ndp from %s to %s: addresses must be IPv6", f.Source, f.Destination)
	}
	body, err := ndp.MarshalMessageChecksum(f.Message, f.Source, f.Destination)
	if err != nil {
		return nil, fmt.Errorf("marshal ndp: %w", err)
	}
	if len(body) > 0xffff {
		return nil, fmt.Errorf("ndp message of %d bytes does not fit in an ipv6 packet", len(body))
	}
	packet := make([]byte, ipv6HeaderLen+len(body))
	packet[0] = 6 << 4
	binary.BigEndian.PutUint16(packet[4:6], uint16(len(body)))
	packet[6] = nextICMPv6
	packet[7] = ndp.HopLimit
	s, d := f.Source.As16(), f.Destination.As16()
	copy(packet[8:24], s[:])
	copy(packet[24:40], d[:])
	copy(packet[ipv6HeaderLen:], body)
	eth := ethernet.Frame{
		Destination: f.EthDestination,
		Source:      f.EthSource,
		EtherType:   ethernet.EtherTypeIPv6,
		Payload:     packet,
	}
	frame, err := eth.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("marshal ethernet: %w", err)
	}
	return frame, nil
}

// LinkLayerAddress returns the first source or target link-layer address
// option (dir) among opts that holds an Ethernet address.
func LinkLayerAddress(opts []ndp.Option, dir ndp.Direction) (net.HardwareAddr, bool) {
	for _, o := range opts {
		if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == dir && len(lla.Addr) == macLen {
			return lla.Addr, true
		}
	}
	return nil, false
}

// MulticastMAC is the Ethernet address frames to an IPv6 multicast group
// go to: 33:33 and the group's last four bytes (RFC 2464 §7).
func MulticastMAC(group netip.Addr) net.HardwareAddr {
	g := group.As16()
	return net.HardwareAddr{0x33, 0x33, g[12], g[13], g[14], g[15]}
}
