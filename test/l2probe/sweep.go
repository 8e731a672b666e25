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

	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

// Sweep asks for many addresses at once: one request for each of addrs
// (IPv4 and IPv6 may be mixed), then it collects the answers until window
// has passed since the last request went out. It returns every distinct
// MAC that answered for each address, in the order they first answered;
// an address nobody answered is absent. Requests and reads overlap, so a
// thousand answers do not overflow the socket's queue. Asks of one family
// take turns with Ask and other Sweeps. Cost: one frame out per address.
func (p *Prober) Sweep(ctx context.Context, addrs []netip.Addr, window time.Duration) (map[netip.Addr][]Answer, error) {
	return p.SweepAs(ctx, p.ifi.HardwareAddr, addrs, window)
}

// SweepAs is Sweep asking from the hardware address from instead of the
// interface's: the requests carry it (and leave with it as their source,
// so a bridge learns where it is), and only answers sent to it count.
// Neither ARP nor NDP says which request an answer is for; giving each
// sweep its own address (a locally administered one) keeps a late answer
// to one sweep from being taken for an answer to the next.
func (p *Prober) SweepAs(ctx context.Context, from net.HardwareAddr, addrs []netip.Addr, window time.Duration) (map[netip.Addr][]Answer, error) {
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		switch {
		case a.Is4():
			v4 = append(v4, a)
		case a.Is6() && !a.Is4In6():
			v6 = append(v6, a)
		default:
			return nil, fmt.Errorf("sweep: %s is not an IPv4 or IPv6 address", a)
		}
	}
	out := map[netip.Addr][]Answer{}
	var mu sync.Mutex
	record := func(addr netip.Addr, a Answer) {
		mu.Lock()
		defer mu.Unlock()
		if !slices.ContainsFunc(out[addr], func(b Answer) bool { return slices.Equal(a.MAC, b.MAC) }) {
			out[addr] = append(out[addr], a)
		}
	}
	sender := p.srcV4
	if !slices.Equal(from, p.ifi.HardwareAddr) {
		sender = netip.IPv4Unspecified()
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	if len(v4) > 0 {
		wg.Go(func() {
			errs[0] = p.sweepFamily(ctx, p.arp, &p.arpMu, v4, window,
				func(a netip.Addr) ([]byte, error) { return p.arpRequestFrom(from, sender, a) },
				func(f []byte, wanted map[netip.Addr]bool) (netip.Addr, net.HardwareAddr, bool, bool) {
					return p.sweptARP(f, wanted, from)
				},
				record)
		})
	}
	if len(v6) > 0 {
		wg.Go(func() {
			errs[1] = p.sweepFamily(ctx, p.ndp, &p.ndpMu, v6, window,
				func(a netip.Addr) ([]byte, error) { return p.solicitationFrom(from, a) },
				func(f []byte, wanted map[netip.Addr]bool) (netip.Addr, net.HardwareAddr, bool, bool) {
					return p.sweptNDP(f, wanted, from)
				},
				record)
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// sweepFamily sends the requests of one family while reading the answers,
// then reads on until window after the last request.
func (p *Prober) sweepFamily(ctx context.Context, conn *packet.Conn, mu *sync.Mutex, addrs []netip.Addr, window time.Duration,
	request func(netip.Addr) ([]byte, error), answer func([]byte, map[netip.Addr]bool) (netip.Addr, net.HardwareAddr, bool, bool),
	record func(netip.Addr, Answer)) error {
	mu.Lock()
	defer mu.Unlock()
	if err := wire.Drain(conn); err != nil {
		return err
	}
	frames := make([][]byte, len(addrs))
	wanted := make(map[netip.Addr]bool, len(addrs))
	for i, a := range addrs {
		f, err := request(a)
		if err != nil {
			return err
		}
		frames[i] = f
		wanted[a] = true
	}
	asked := time.Now()
	sent := make(chan error, 1)
	var end time.Time
	go func() {
		for _, f := range frames {
			if _, err := conn.WriteTo(f, &packet.Addr{HardwareAddr: net.HardwareAddr(f[:6])}); err != nil {
				sent <- fmt.Errorf("sweep: %w", err)
				return
			}
		}
		sent <- nil
	}()
	buf := make([]byte, 2048)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case err := <-sent:
			if err != nil {
				return err
			}
			end = time.Now().Add(window)
		default:
		}
		now := time.Now()
		if !end.IsZero() && !end.After(now) {
			return nil
		}
		// Read in slices of at most 20 ms, so the writer's end and a
		// cancelled ctx are seen.
		deadline := now.Add(20 * time.Millisecond)
		if !end.IsZero() && end.Before(deadline) {
			deadline = end
		}
		if err := conn.SetReadDeadline(deadline); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		n, _, err := conn.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		addr, mac, toUs, ok := answer(buf[:n], wanted)
		switch {
		case ok && toUs:
			record(addr, Answer{MAC: mac, Asked: asked, At: time.Now()})
		case ok && p.OnLate != nil:
			p.OnLate(addr, Answer{MAC: mac, At: time.Now()})
		}
	}
}

// sweptARP accepts an ARP answer for a wanted address and reports
// whether it was sent to the hardware address to (else to another of
// the client's: an answer to an earlier sweep).
func (p *Prober) sweptARP(frame []byte, wanted map[netip.Addr]bool, to net.HardwareAddr) (netip.Addr, net.HardwareAddr, bool, bool) {
	r, _, err := wire.ParseARP(frame)
	if err != nil || !wanted[r.SenderIP] {
		return netip.Addr{}, nil, false, false
	}
	mac, ok := p.arpAnswerTo(frame, r.SenderIP, r.TargetHardwareAddr)
	return r.SenderIP, mac, slices.Equal(r.TargetHardwareAddr, to), ok
}

// sweptNDP accepts what ndpAnswer accepts for a wanted address, and
// reports whether it was sent to the hardware address to. From the
// unspecified address the answers are multicast: all count as sent to
// to.
func (p *Prober) sweptNDP(frame []byte, wanted map[netip.Addr]bool, to net.HardwareAddr) (netip.Addr, net.HardwareAddr, bool, bool) {
	m, err := wire.ParseNDP(frame)
	if err != nil {
		return netip.Addr{}, nil, false, false
	}
	na, ok := m.Message.(*ndp.NeighborAdvertisement)
	if !ok || !wanted[na.TargetAddress] {
		return netip.Addr{}, nil, false, false
	}
	mac, ok := p.ndpAnswer(frame, na.TargetAddress)
	toUs := p.srcV6.IsUnspecified() || slices.Equal(m.EthDestination, to)
	return na.TargetAddress, mac, toUs, ok
}
