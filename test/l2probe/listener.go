package l2probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
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

// Announcement is one gratuitous ARP or unsolicited neighbor advertisement
// heard: MAC claims Addr.
type Announcement struct {
	Addr     netip.Addr
	MAC      net.HardwareAddr
	At       time.Time
	Protocol string // "arp" or "ndp"
}

// For matches announcements of addr, for Wait.
func For(addr netip.Addr) func(Announcement) bool {
	return func(a Announcement) bool { return a.Addr == addr }
}

// ForMAC matches announcements of addr by mac, for Wait.
func ForMAC(addr netip.Addr, mac net.HardwareAddr) func(Announcement) bool {
	return func(a Announcement) bool { return a.Addr == addr && slices.Equal(a.MAC, mac) }
}

// Listener records the announcements heard on one interface, from Listen
// until its context ends or Close is called.
type Listener struct {
	arp, ndp *packet.Conn
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	seen    []Announcement
	changed chan struct{} // closed and replaced on every new announcement
	err     error         // first read error, if a reader stopped on one
}

// Listen starts recording announcements on the interface named ifname in
// the calling thread's network namespace.
func Listen(ctx context.Context, ifname string) (*Listener, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("listener: %w", err)
	}
	l := &Listener{changed: make(chan struct{})}
	if l.arp, err = wire.Listen(ifi, ethernet.EtherTypeARP, wire.AnyARPFilter()); err != nil {
		return nil, fmt.Errorf("listener: %w", err)
	}
	if l.ndp, err = wire.Listen(ifi, ethernet.EtherTypeIPv6, wire.NDPFilter(ipv6.ICMPTypeNeighborAdvertisement)); err != nil {
		l.arp.Close()
		return nil, fmt.Errorf("listener: %w", err)
	}
	ctx, l.cancel = context.WithCancel(ctx)
	for _, r := range []struct {
		conn  *packet.Conn
		parse func([]byte) (Announcement, bool)
	}{{l.arp, arpAnnouncement}, {l.ndp, ndpAnnouncement}} {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.read(ctx, r.conn, r.parse)
		}()
	}
	// Closing the sockets is what ends the readers' blocked reads.
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		<-ctx.Done()
		l.arp.Close()
		l.ndp.Close()
	}()
	return l, nil
}

// Close stops recording and waits for the Listener's goroutines.
func (l *Listener) Close() error {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Seen returns every announcement recorded so far, oldest first.
func (l *Listener) Seen() []Announcement {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// Wait returns the first recorded announcement that match accepts, waiting
// for one if none has come yet.
func (l *Listener) Wait(ctx context.Context, match func(Announcement) bool) (Announcement, error) {
	for {
		l.mu.Lock()
		i := slices.IndexFunc(l.seen, match)
		var a Announcement
		if i >= 0 {
			a = l.seen[i]
		}
		changed, err := l.changed, l.err
		l.mu.Unlock()
		if i >= 0 {
			return a, nil
		}
		if err != nil {
			return Announcement{}, err
		}
		select {
		case <-ctx.Done():
			return Announcement{}, ctx.Err()
		case <-changed:
		}
	}
}

func (l *Listener) read(ctx context.Context, conn *packet.Conn, parse func([]byte) (Announcement, bool)) {
	buf := make([]byte, 2048)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			// The sockets are closed only once ctx has ended; any error
			// before that is a real one.
			if ctx.Err() == nil {
				l.mu.Lock()
				if l.err == nil {
					l.err = fmt.Errorf("listener: %w", err)
				}
				close(l.changed)
				l.changed = make(chan struct{})
				l.mu.Unlock()
			}
			return
		}
		a, ok := parse(buf[:n])
		if !ok {
			continue
		}
		a.At = time.Now()
		l.mu.Lock()
		l.seen = append(l.seen, a)
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
}

// arpAnnouncement recognizes gratuitous ARP, request or reply: the sender
// names itself as the target.
func arpAnnouncement(frame []byte) (Announcement, bool) {
	p, _, err := wire.ParseARP(frame)
	if err != nil || p.SenderIP != p.TargetIP || p.SenderIP.IsUnspecified() ||
		(p.Operation != arp.OperationRequest && p.Operation != arp.OperationReply) {
		return Announcement{}, false
	}
	return Announcement{Addr: p.SenderIP, MAC: p.SenderHardwareAddr, Protocol: "arp"}, true
}

// ndpAnnouncement recognizes unsolicited neighbor advertisements.
func ndpAnnouncement(frame []byte) (Announcement, bool) {
	m, err := wire.ParseNDP(frame)
	if err != nil {
		return Announcement{}, false
	}
	na, ok := m.Message.(*ndp.NeighborAdvertisement)
	if !ok || na.Solicited {
		return Announcement{}, false
	}
	return Announcement{Addr: na.TargetAddress, MAC: advertisedMAC(m, na), Protocol: "ndp"}, true
}
