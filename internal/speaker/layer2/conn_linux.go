package layer2

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

var (
	_ FrameConn   = (*packet.Conn)(nil)
	_ FrameConn   = (*ndpConn)(nil)
	_ GroupMember = (*ndpConn)(nil)
)

// OpenPacketConn opens the real AF_PACKET socket for p on l, filtered in
// the kernel to ARP requests or to ICMPv6 neighbor solicitations.
func OpenPacketConn(l Link, p Protocol) (FrameConn, error) {
	ifi := &net.Interface{Index: l.Index, Name: l.Name, HardwareAddr: l.HardwareAddr}
	switch p {
	case ARP:
		return wire.Listen(ifi, ethernet.EtherTypeARP, wire.ARPFilter(arp.OperationRequest))
	case NDP:
		return openNDPConn(ifi)
	default:
		return nil, fmt.Errorf("open %s on %s: unknown protocol", p, l.Name)
	}
}

// ndpConn reads and writes NDP frames on a packet socket, like the ARP
// responder, so a reply leaves with exactly the MAC and addresses we choose
// and without waiting for the kernel to resolve the asker first (an ICMPv6
// socket would). A packet socket alone, though, is invisible to multicast
// listener discovery: a NIC's multicast filter or a switch doing MLD
// snooping would never pass it a solicitation sent to the solicited-node
// group of an address this host does not own. So each ndpConn also holds a
// UDP socket, bound to an ephemeral port and never read, used only to join
// those groups: the kernel then programs the NIC filter and sends the MLD
// reports. Joining can run out of socket option memory (net.core.optmem_max)
// with thousands of groups; from then on the interface receives all
// multicast instead, which is correct on an unfiltered segment and the best
// a host can do otherwise.
type ndpConn struct {
	*packet.Conn
	ifi *net.Interface

	mu       sync.Mutex
	member   *ipv6.PacketConn // nil when no UDP socket could be opened
	allMulti bool
}

func openNDPConn(ifi *net.Interface) (*ndpConn, error) {
	pc, err := wire.Listen(ifi, ethernet.EtherTypeIPv6, wire.NDPFilter(ipv6.ICMPTypeNeighborSolicitation))
	if err != nil {
		return nil, err
	}
	c := &ndpConn{Conn: pc, ifi: ifi}
	udp, err := net.ListenPacket("udp6", "[::]:0")
	if err != nil {
		// IPv6 is off for the host's stack; nothing can join groups.
		if err := c.receiveAllMulticast(); err != nil {
			pc.Close()
			return nil, fmt.Errorf("ndp on %s: %w", ifi.Name, err)
		}
		return c, nil
	}
	c.member = ipv6.NewPacketConn(udp)
	return c, nil
}

// JoinGroup subscribes the interface to group. After a join has failed
// once, the interface receives all multicast and JoinGroup does nothing;
// the error of that first failure says so.
func (c *ndpConn) JoinGroup(group netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allMulti {
		return nil
	}
	joinErr := c.member.JoinGroup(c.ifi, &net.UDPAddr{IP: group.AsSlice()})
	if joinErr == nil {
		return nil
	}
	if err := c.receiveAllMulticast(); err != nil {
		return fmt.Errorf("join %s on %s: %w; %w", group, c.ifi.Name, joinErr, err)
	}
	return fmt.Errorf("join %s on %s: %w; receiving all multicast from now on", group, c.ifi.Name, joinErr)
}

// LeaveGroup drops a subscription JoinGroup made.
func (c *ndpConn) LeaveGroup(group netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allMulti {
		return nil
	}
	if err := c.member.LeaveGroup(c.ifi, &net.UDPAddr{IP: group.AsSlice()}); err != nil {
		return fmt.Errorf("leave %s on %s: %w", group, c.ifi.Name, err)
	}
	return nil
}

func (c *ndpConn) receiveAllMulticast() error {
	if err := wire.ReceiveAllMulticast(c.Conn, c.ifi.Index); err != nil {
		return err
	}
	c.allMulti = true
	return nil
}

// Close closes both sockets; the kernel drops their memberships.
func (c *ndpConn) Close() error {
	err := c.Conn.Close()
	if c.member != nil {
		err = errors.Join(err, c.member.Close())
	}
	return err
}
