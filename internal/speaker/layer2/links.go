package layer2

import (
	"net"
	"net/netip"
	"slices"
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
	// NoARP: the interface resolves no neighbours (IFF_NOARP), as the
	// dummy devices kube-proxy and NodeLocal DNSCache create (kube-ipvs0,
	// nodelocaldns) and tunnels: nobody would ask there.
	NoARP bool
	// Addrs are the addresses assigned to the interface.
	Addrs []netip.Addr
	// Prefixes are the subnets the interface is on: the prefixes of its
	// addresses and of its routes in the main table that have no gateway
	// (connected or on-link routes), default routes left out.
	Prefixes []netip.Prefix
}

// Usable reports whether l may answer: administratively up,
// broadcast-capable, resolving neighbours, not loopback, not enslaved
// (frames of a bond or bridge port are answered on the bond or bridge),
// with an Ethernet address.
func (l Link) Usable() bool {
	return l.Flags&net.FlagUp != 0 &&
		l.Flags&net.FlagBroadcast != 0 &&
		l.Flags&net.FlagLoopback == 0 &&
		!l.NoARP &&
		l.MasterIndex == 0 &&
		len(l.HardwareAddr) == 6
}

// OnSubnetOf reports whether addr is in one of the interface's subnets,
// that is, whether the hosts that ask for addr are reached through it.
func (l Link) OnSubnetOf(addr netip.Addr) bool {
	for _, p := range l.Prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Carries reports whether one of addrs is assigned to the interface.
func (l Link) Carries(addrs []netip.Addr) bool {
	for _, a := range l.Addrs {
		if slices.Contains(addrs, a) {
			return true
		}
	}
	return false
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
