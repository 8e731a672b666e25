package wire

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Listen opens a raw packet socket on ifi for frames of one EtherType that
// pass filter (applied before the socket is bound, so nothing else is ever
// queued). The socket does not see the frames this host sends, so neither a
// responder nor a probe reads its own traffic back; on kernels older than
// 4.20, which lack that option, the parsers' own checks drop them instead.
func Listen(ifi *net.Interface, etherType ethernet.EtherType, filter []bpf.Instruction) (*packet.Conn, error) {
	prog, err := bpf.Assemble(filter)
	if err != nil {
		return nil, fmt.Errorf("assemble filter: %w", err)
	}
	c, err := packet.Listen(ifi, packet.Raw, int(etherType), &packet.Config{Filter: prog})
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s for %s: %w", ifi.Name, etherType, err)
	}
	if err := setsockopt(c, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}); err != nil && !errors.Is(err, unix.ENOPROTOOPT) {
		c.Close()
		return nil, fmt.Errorf("ignore outgoing frames on %s: %w", ifi.Name, err)
	}
	return c, nil
}

// ReceiveAllMulticast makes the interface of c accept every multicast frame
// (PACKET_MR_ALLMULTI) for as long as c is open.
func ReceiveAllMulticast(c *packet.Conn, ifindex int) error {
	mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_ALLMULTI}
	if err := setsockopt(c, func(fd int) error {
		return unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq)
	}); err != nil {
		return fmt.Errorf("receive all multicast: %w", err)
	}
	return nil
}

// Drain discards the frames already queued on c without waiting for more.
// It clears c's read deadline, which would otherwise fail the drain itself.
func Drain(c *packet.Conn) error {
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	var buf [1]byte
	var readErr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			_, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_DONTWAIT)
			switch err {
			case nil, unix.EINTR:
				continue
			case unix.EAGAIN:
			default:
				readErr = err
			}
			// Done either way: returning false would wait for more frames.
			return true
		}
	})
	if err == nil {
		err = readErr
	}
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

func setsockopt(c *packet.Conn, set func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var setErr error
	if err := rc.Control(func(fd uintptr) { setErr = set(int(fd)) }); err != nil {
		return err
	}
	return setErr
}
