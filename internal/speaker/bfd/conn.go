package bfd

import "net/netip"

// RFC 5881 and RFC 5883 transport constants.
const (
	// ControlPort is where single-hop control packets are received.
	ControlPort = 3784
	// MultihopControlPort is where multi-hop ones are (RFC 5883).
	MultihopControlPort = 4784
	// Control packets leave from a source port in this range, the same
	// one for all packets of a session (RFC 5881 section 4).
	SourcePortMin = 49152
	SourcePortMax = 65535
	// SingleHopTTL is the TTL (IPv4) or hop limit (IPv6) every packet is
	// sent with and every received single-hop packet must carry (RFC
	// 5881 section 5): a packet that crossed a router cannot have it.
	// A multi-hop packet must carry at least its profile's MinimumTTL.
	SingleHopTTL = 255
)

// Family is an address family; the Manager runs one PacketConn for each.
type Family uint8

const (
	IPv4 Family = 4
	IPv6 Family = 6
)

func (f Family) String() string {
	if f == IPv4 {
		return "IPv4"
	}
	return "IPv6"
}

func familyOf(a netip.Addr) Family {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// Transport is where a session's packets travel: one address family,
// single-hop (RFC 5881) or multi-hop (RFC 5883), in one VRF. The Manager
// runs one PacketConn per Transport its sessions use.
type Transport struct {
	Family   Family
	MultiHop bool
	// VRF is the VRF device the sockets are bound to (SO_BINDTODEVICE);
	// empty for the default VRF.
	VRF string
}

// Port is where the Transport's control packets are received, and sent
// to.
func (t Transport) Port() int {
	if t.MultiHop {
		return MultihopControlPort
	}
	return ControlPort
}

func (t Transport) String() string {
	s := t.Family.String()
	if t.MultiHop {
		s += " multi-hop"
	} else {
		s += " single-hop"
	}
	if t.VRF != "" {
		s += " in VRF " + t.VRF
	}
	return s
}

// PacketInfo addresses one datagram. For a received one, Local is its
// destination and Remote its source; for one to send, Local is the
// source and Remote the destination (on the Transport's Port).
type PacketInfo struct {
	Local, Remote netip.Addr
	// IfIndex is the interface a packet arrived on or must leave by;
	// zero on send lets routing choose.
	IfIndex int
	// TTL is a received packet's TTL or hop limit, -1 when the kernel did
	// not report it. Sent packets always carry SingleHopTTL.
	TTL int
}

// PacketConn carries the control packets of one Transport: it receives
// on the Transport's Port and sends to it, from one source port in the
// RFC 5881 range. The Manager calls ReadPacket from one goroutine and the other
// methods from others, so implementations must allow that. ListenUDP
// opens the real one; tests use an in-memory network.
type PacketConn interface {
	// ReadPacket blocks until a datagram arrives, and fails for good
	// once Close was called.
	ReadPacket(b []byte) (n int, info PacketInfo, err error)
	WritePacket(b []byte, to PacketInfo) error
	// InterfaceIndex resolves an interface name in the network namespace
	// the connection lives in (which need not be the calling thread's).
	InterfaceIndex(name string) (int, error)
	Close() error
}

// ListenFunc opens the PacketConn of one Transport.
type ListenFunc func(Transport) (PacketConn, error)
