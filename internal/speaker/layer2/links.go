package layer2

import (
	"net"
	"net/netip"
)

// Link is a network interface as the announcer sees it.
type Link struct {
	Name         string
	Index        int
	HardwareAddr net.HardwareAddr
	// Flags: FlagUp, FlagBroadcast and FlagLoopback decide Usable.
	Flags net.Flags
	// MasterIndex is the index of the bond or bridge this interface is
	// enslaved to, 0 when it is not enslaved.
	MasterIndex int
	// CarrierUps counts the times the carrier came up since the interface
	// was created (0 where the kernel does not say).
	CarrierUps uint32
}

// Usable reports whether l may answer: administratively up,
// broadcast-capable, not loopback, not enslaved (frames of a bond or bridge
// port are answered on the bond or bridge), with an Ethernet address.
func (l Link) Usable() bool {
	return l.Flags&net.FlagUp != 0 &&
		l.Flags&net.FlagBroadcast != 0 &&
		l.Flags&net.FlagLoopback == 0 &&
		l.MasterIndex == 0 &&
		len(l.HardwareAddr) == 6
}

// Protocol is how a responder answers: ARP for IPv4, NDP for IPv6.
type Protocol int

// The two protocols, one responder of each per interface at most.
const (
	ARP Protocol = iota + 1
	NDP
)

func (p Protocol) String() string {
	switch p {
	case ARP:
		return "arp"
	case NDP:
		return "ndp"
	default:
		return "unknown"
	}
}

func protocolOf(addr netip.Addr) Protocol {
	if addr.Is4() {
		return ARP
	}
	return NDP
}
