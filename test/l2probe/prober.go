package l2probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

// Answer is one MAC that answered for an address.
type Answer struct {
	MAC net.HardwareAddr
	// Asked is when the request that got this answer was sent; At is when
	// the answer was read.
	Asked, At time.Time
}

// Prober sends ARP requests and neighbor solicitations on one interface
// and collects the answers. Its methods may be called concurrently; asks
// of one family take turns.
type Prober struct {
	ifi          *net.Interface
	srcV4, srcV6 netip.Addr

	arpMu, ndpMu sync.Mutex
	arp, ndp     *packet.Conn

	// OnLate, when set (before the first sweep), is told of each answer a
	// sweep reads for an address it asks that was sent to another of the
	// client's hardware addresses: most often an answer to an earlier
	// sweep that came after that sweep's window. Called from the
	// sweeps' goroutines.
	OnLate func(addr netip.Addr, a Answer)
}

// NewProber opens a Prober on the interface named ifname in the calling
// thread's network namespace.
func NewProber(ifname string) (*Prober, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("prober: %w", err)
	}
	p := &Prober{ifi: ifi, srcV4: netip.IPv4Unspecified(), srcV6: netip.IPv6Unspecified()}
	p.chooseSources()
	if p.arp, err = wire.Listen(ifi, ethernet.EtherTypeARP, wire.ARPFilter(arp.OperationReply)); err != nil {
		return nil, fmt.Errorf("prober: %w", err)
	}
	if p.ndp, err = wire.Listen(ifi, ethernet.EtherTypeIPv6, wire.NDPFilter(ipv6.ICMPTypeNeighborAdvertisement)); err != nil {
		p.arp.Close()
		return nil, fmt.Errorf("prober: %w", err)
	}
	return p, nil
}

func (p *Prober) chooseSources() {
	addrs, err := p.ifi.Addrs()
	if err != nil {
		return
	}
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipnet.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		switch {
		case ip.Is4() && p.srcV4.IsUnspecified():
			p.srcV4 = ip
		case ip.Is6() && ip.IsLinkLocalUnicast() && p.srcV6.IsUnspecified():
			p.srcV6 = ip
		}
	}
}

// MAC is the interface's MAC, the one the Prober asks from.
func (p *Prober) MAC() net.HardwareAddr { return p.ifi.HardwareAddr }

// Close closes the Prober's sockets.
func (p *Prober) Close() error {
	return errors.Join(p.arp.Close(), p.ndp.Close())
}

// Ask sends one request for addr (ARP for IPv4, a neighbor solicitation
// for IPv6) and returns every distinct MAC that answered within window, in
// the order they first answered. Answers to earlier requests still queued
// are discarded first. No answer is an empty result, not an error.
func (p *Prober) Ask(ctx context.Context, addr netip.Addr, window time.Duration) ([]Answer, error) {
	var answers []Answer
	err := p.ask(ctx, addr, window, func(a Answer) bool {
		if !slices.ContainsFunc(answers, func(b Answer) bool { return slices.Equal(a.MAC, b.MAC) }) {
			answers = append(answers, a)
		}
		return false
	})
	return answers, err
}

// AwaitAnswer asks for addr every interval until an answer comes from a
// MAC accept takes, and returns that answer as soon as it is read. It
// fails only when ctx ends or a socket fails.
func (p *Prober) AwaitAnswer(ctx context.Context, addr netip.Addr, interval time.Duration, accept func(net.HardwareAddr) bool) (Answer, error) {
	for {
		var found *Answer
		err := p.ask(ctx, addr, interval, func(a Answer) bool {
			if accept(a.MAC) {
				found = &a
			}
			return found != nil
		})
		if found != nil {
			return *found, nil
		}
		if err != nil {
			return Answer{}, err
		}
	}
}

// AwaitNewMAC asks for addr every interval until a MAC other than old
// answers (any MAC if old is nil): the failover measurement. The answer's
// At is when that MAC's answer was read.
func (p *Prober) AwaitNewMAC(ctx context.Context, addr netip.Addr, old net.HardwareAddr, interval time.Duration) (Answer, error) {
	return p.AwaitAnswer(ctx, addr, interval, func(mac net.HardwareAddr) bool { return !slices.Equal(mac, old) })
}

// ask sends one request and calls found for each answer read within window
// until found returns true. ctx ending is an error; the window ending is
// not.
func (p *Prober) ask(ctx context.Context, addr netip.Addr, window time.Duration, found func(Answer) bool) error {
	conn, mu, request, match, err := p.forFamily(addr)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if err := wire.Drain(conn); err != nil {
		return err
	}
	asked := time.Now()
	if _, err := conn.WriteTo(request, &packet.Addr{HardwareAddr: net.HardwareAddr(request[:6])}); err != nil {
		return fmt.Errorf("ask for %s: %w", addr, err)
	}
	end := asked.Add(window)
	buf := make([]byte, 2048)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Read in slices of at most 50 ms so a cancelled ctx is seen.
		now := time.Now()
		if !end.After(now) {
			return nil
		}
		deadline := now.Add(50 * time.Millisecond)
		if end.Before(deadline) {
			deadline = end
		}
		if err := conn.SetReadDeadline(deadline); err != nil {
			return fmt.Errorf("ask for %s: %w", addr, err)
		}
		n, _, err := conn.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ask for %s: %w", addr, err)
		}
		if mac, ok := match(buf[:n]); ok && found(Answer{MAC: mac, Asked: asked, At: time.Now()}) {
			return nil
		}
	}
}

// forFamily returns the socket, its lock, the request frame and the
// answer matcher for addr's family.
func (p *Prober) forFamily(addr netip.Addr) (*packet.Conn, *sync.Mutex, []byte, func([]byte) (net.HardwareAddr, bool), error) {
	switch {
	case addr.Is4():
		req, err := p.arpRequest(addr)
		return p.arp, &p.arpMu, req, func(f []byte) (net.HardwareAddr, bool) { return p.arpAnswer(f, addr) }, err
	case addr.Is6() && !addr.Is4In6():
		req, err := p.solicitation(addr)
		return p.ndp, &p.ndpMu, req, func(f []byte) (net.HardwareAddr, bool) { return p.ndpAnswer(f, addr) }, err
	default:
		return nil, nil, nil, nil, fmt.Errorf("ask for %s: not an IPv4 or IPv6 address", addr)
	}
}

func (p *Prober) arpRequest(target netip.Addr) ([]byte, error) {
	return p.arpRequestFrom(p.ifi.HardwareAddr, p.srcV4, target)
}

// arpRequestFrom asks with from as the asker's hardware address, in the
// request and as the frame's source, and sender as its IP.
func (p *Prober) arpRequestFrom(from net.HardwareAddr, sender, target netip.Addr) ([]byte, error) {
	req, err := arp.NewPacket(arp.OperationRequest, from, sender, net.HardwareAddr{0, 0, 0, 0, 0, 0}, target)
	if err != nil {
		return nil, fmt.Errorf("ask for %s: %w", target, err)
	}
	return wire.MarshalARP(req, ethernet.Broadcast)
}

// arpAnswer accepts a reply from target to us; announcements (sender IP =
// target IP) are not answers.
func (p *Prober) arpAnswer(frame []byte, target netip.Addr) (net.HardwareAddr, bool) {
	return p.arpAnswerTo(frame, target, p.ifi.HardwareAddr)
}

// arpAnswerTo is arpAnswer for requests asked from the hardware address
// to.
func (p *Prober) arpAnswerTo(frame []byte, target netip.Addr, to net.HardwareAddr) (net.HardwareAddr, bool) {
	r, _, err := wire.ParseARP(frame)
	if err != nil || r.Operation != arp.OperationReply || r.SenderIP != target || r.TargetIP == target ||
		!slices.Equal(r.TargetHardwareAddr, to) {
		return nil, false
	}
	return r.SenderHardwareAddr, true
}

func (p *Prober) solicitation(target netip.Addr) ([]byte, error) {
	return p.solicitationFrom(p.ifi.HardwareAddr, target)
}

// solicitationFrom asks with from as the source link-layer address and
// the frame's source.
func (p *Prober) solicitationFrom(from net.HardwareAddr, target netip.Addr) ([]byte, error) {
	group, err := ndp.SolicitedNodeMulticast(target)
	if err != nil {
		return nil, fmt.Errorf("ask for %s: %w", target, err)
	}
	ns := &ndp.NeighborSolicitation{TargetAddress: target}
	if !p.srcV6.IsUnspecified() {
		ns.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: from}}
	}
	return wire.MarshalNDP(wire.NDP{
		EthSource:      from,
		EthDestination: wire.MulticastMAC(group),
		Source:         p.srcV6,
		Destination:    group,
		Message:        ns,
	})
}

// ndpAnswer accepts a solicited advertisement for target sent to us, or,
// when we ask from ::, any advertisement for target (the answer to such a
// probe is multicast and unsolicited by definition).
func (p *Prober) ndpAnswer(frame []byte, target netip.Addr) (net.HardwareAddr, bool) {
	m, err := wire.ParseNDP(frame)
	if err != nil {
		return nil, false
	}
	na, ok := m.Message.(*ndp.NeighborAdvertisement)
	if !ok || na.TargetAddress != target {
		return nil, false
	}
	if !p.srcV6.IsUnspecified() && (!na.Solicited || m.Destination != p.srcV6) {
		return nil, false
	}
	return advertisedMAC(m, na), true
}

// advertisedMAC is the target link-layer option, or the Ethernet source
// when the advertisement has none.
func advertisedMAC(m wire.NDP, na *ndp.NeighborAdvertisement) net.HardwareAddr {
	if mac, ok := wire.LinkLayerAddress(na.Options, ndp.Target); ok {
		return mac
	}
	return m.EthSource
}
