package layer2

import (
	"net"
	"net/netip"
)

// FrameConn is a link-layer socket on one interface that reads and writes
// whole Ethernet frames of one protocol (ARP, or IPv6 carrying neighbor
// solicitations). ReadFrom blocks until a frame arrives and fails once
// Close has been called. *packet.Conn satisfies it; unit tests use an
// in-memory fake.
type FrameConn interface {
	ReadFrom(frame []byte) (n int, from net.Addr, err error)
	WriteTo(frame []byte, to net.Addr) (n int, err error)
	Close() error
}

// GroupMember is implemented by NDP connections that must subscribe to
// IPv6 multicast groups to hear the solicitations for an address. The
// responder joins each solicited-node group once, however many of its
// addresses map to it, and leaves it when the last one goes.
type GroupMember interface {
	JoinGroup(group netip.Addr) error
	LeaveGroup(group netip.Addr) error
}

// OpenFunc opens the connection a responder of protocol p reads from on
// link l.
type OpenFunc func(l Link, p Protocol) (FrameConn, error)
