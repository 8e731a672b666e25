package bfd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

var _ PacketConn = (*udpConn)(nil)

// udpConn is the real PacketConn of one Transport: a socket bound to the
// wildcard address on the Transport's port that reads, with the TTL,
// destination and interface of each datagram from control messages, and
// a second one bound to a random port of the RFC 5881 source range that
// writes with TTL 255 and, per packet, the session's source address and
// interface. Two sockets because no port is both 3784 (or 4784) and in
// the source range; one pair serves every session of the Transport. In a
// VRF both are bound to the VRF device, so they send and receive through
// the VRF's table and interfaces only.
type udpConn struct {
	tr         Transport
	recv, send *net.UDPConn
	r4, w4     *ipv4.PacketConn
	r6, w6     *ipv6.PacketConn
}

// ListenUDP opens the sockets of t in the calling thread's network
// namespace.
func ListenUDP(t Transport) (PacketConn, error) {
	network, wildcard := "udp4", netip.IPv4Unspecified()
	if t.Family == IPv6 {
		network, wildcard = "udp6", netip.IPv6Unspecified()
	}
	lc := net.ListenConfig{Control: socketOptions(t.VRF)}
	recv, err := listenUDP(lc, network, netip.AddrPortFrom(wildcard, uint16(t.Port())))
	if err != nil {
		return nil, fmt.Errorf("listen for %s BFD control packets: %w", t, err)
	}
	send, err := listenSourcePort(lc, network, wildcard)
	if err != nil {
		recv.Close()
		return nil, fmt.Errorf("open %s BFD send socket: %w", t, err)
	}
	c := &udpConn{tr: t, recv: recv, send: send}
	if err := c.setOptions(); err != nil {
		c.Close()
		return nil, fmt.Errorf("set up %s BFD sockets: %w", t, err)
	}
	return c, nil
}

// socketOptions prepares a socket before it is bound. SO_REUSEADDR lets
// the sockets of several Transports share a port: one unbound (the
// default VRF) and one bound to each VRF device, the kernel giving each
// datagram to the socket bound to the device it arrived on before the
// unbound one. In a VRF, the socket is bound to the VRF device
// (SO_BINDTODEVICE), as Linux wants before it is bound to its address.
func socketOptions(device string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr != nil {
				serr = fmt.Errorf("SO_REUSEADDR: %w", serr)
				return
			}
			if device != "" {
				if serr = unix.BindToDevice(int(fd), device); serr != nil {
					serr = fmt.Errorf("bind to VRF device %q: %w", device, serr)
				}
			}
		})
		return errors.Join(err, serr)
	}
}

func listenUDP(lc net.ListenConfig, network string, at netip.AddrPort) (*net.UDPConn, error) {
	pc, err := lc.ListenPacket(context.Background(), network, at.String())
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// listenSourcePort binds a random free port of the RFC 5881 source range.
func listenSourcePort(lc net.ListenConfig, network string, wildcard netip.Addr) (*net.UDPConn, error) {
	const tries = 64
	var err error
	for range tries {
		port := uint16(SourcePortMin + rand.IntN(SourcePortMax-SourcePortMin+1))
		var c *net.UDPConn
		c, err = listenUDP(lc, network, netip.AddrPortFrom(wildcard, port))
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free port in %d-%d after %d tries: %w", SourcePortMin, SourcePortMax, tries, err)
}

func (c *udpConn) setOptions() error {
	if c.tr.Family == IPv4 {
		c.r4, c.w4 = ipv4.NewPacketConn(c.recv), ipv4.NewPacketConn(c.send)
		return errors.Join(
			c.r4.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst|ipv4.FlagInterface, true),
			c.w4.SetTTL(SingleHopTTL),
		)
	}
	c.r6, c.w6 = ipv6.NewPacketConn(c.recv), ipv6.NewPacketConn(c.send)
	return errors.Join(
		c.r6.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagDst|ipv6.FlagInterface, true),
		c.w6.SetHopLimit(SingleHopTTL),
	)
}

func (c *udpConn) ReadPacket(b []byte) (int, PacketInfo, error) {
	info := PacketInfo{TTL: -1}
	var (
		n   int
		src net.Addr
		err error
	)
	if c.tr.Family == IPv4 {
		var cm *ipv4.ControlMessage
		n, cm, src, err = c.r4.ReadFrom(b)
		if cm != nil {
			info.TTL, info.IfIndex, info.Local = cm.TTL, cm.IfIndex, addrFromIP(cm.Dst)
		}
	} else {
		var cm *ipv6.ControlMessage
		n, cm, src, err = c.r6.ReadFrom(b)
		if cm != nil {
			info.TTL, info.IfIndex, info.Local = cm.HopLimit, cm.IfIndex, addrFromIP(cm.Dst)
		}
	}
	if err != nil {
		return 0, PacketInfo{}, err
	}
	if u, ok := src.(*net.UDPAddr); ok {
		info.Remote = addrFromIP(u.IP)
	}
	return n, info, nil
}

func (c *udpConn) WritePacket(b []byte, to PacketInfo) error {
	dst := &net.UDPAddr{IP: to.Remote.AsSlice(), Port: c.tr.Port()}
	var src net.IP
	if to.Local.IsValid() {
		src = to.Local.AsSlice()
	}
	var err error
	if c.tr.Family == IPv4 {
		_, err = c.w4.WriteTo(b, &ipv4.ControlMessage{Src: src, IfIndex: to.IfIndex}, dst)
	} else {
		if to.IfIndex != 0 && to.Remote.IsLinkLocalUnicast() {
			dst.Zone = strconv.Itoa(to.IfIndex)
		}
		_, err = c.w6.WriteTo(b, &ipv6.ControlMessage{Src: src, IfIndex: to.IfIndex, HopLimit: SingleHopTTL}, dst)
	}
	return err
}

// InterfaceIndex asks the kernel through the receive socket, so the name
// is looked up in the socket's namespace whatever thread calls.
func (c *udpConn) InterfaceIndex(name string) (int, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, fmt.Errorf("interface %q: %w", name, err)
	}
	raw, err := c.recv.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("interface %q: %w", name, err)
	}
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) { ioctlErr = unix.IoctlIfreq(int(fd), unix.SIOCGIFINDEX, ifr) }); err != nil {
		return 0, fmt.Errorf("interface %q: %w", name, err)
	}
	if ioctlErr != nil {
		return 0, fmt.Errorf("interface %q: %w", name, ioctlErr)
	}
	return int(ifr.Uint32()), nil
}

func (c *udpConn) Close() error {
	return errors.Join(c.recv.Close(), c.send.Close())
}

// addrFromIP converts at the socket edge: IPv4 as 4 bytes, no zone.
func addrFromIP(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}
