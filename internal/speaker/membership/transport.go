package membership

import (
	"errors"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

var _ memberlist.NodeAwareTransport = (*transport)(nil)

// transport is memberlist's own UDP/TCP transport with three additions: it
// counts the packets it sends, so the metrics can show the gossip traffic
// (probes, acks, gossip: everything but the TCP push/pull streams), it
// takes the declared-dead packets (fence.go) out of what it hands
// memberlist, giving them with their source address to fence, and it
// takes this member's own markers (inbox.go) out too, for CaughtUp.
//
// Its one goroutine moves packets from the socket's channel to
// memberlist's; it runs from newTransport until Shutdown, which waits for
// it. It never waits for memberlist: a declared-dead packet must reach the
// fence however far behind memberlist's packet handler is (it logs under
// its state lock, and a node short of CPU, or whose log pipe is full, was
// seen stuck there for seconds while its replacement answered), so
// memberlist's packets wait in a queue of their own, and when that is
// full they are dropped, as a full socket buffer would drop them.
// memberlist loses nothing it cannot lose on UDP.
type transport struct {
	*memberlist.NetTransport
	fence func(packet []byte, src net.Addr)
	inbox *inbox
	// self is the socket's own address, host:port, as the markers and
	// the departure checks are sent to it.
	self    string
	packets chan *memberlist.Packet
	// done ends sort.
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once

	sent      atomic.Uint64
	sentBytes atomic.Uint64
	dropped   atomic.Uint64 // packets for memberlist while its queue was full

	// frozen, while set, stops sort and fails every dial until it is
	// closed: a test freezes a member's reading with it, as starving the
	// process of CPU does, while its timers and sends go on. Shutdown
	// ends the freeze (closing): memberlist's listener waits for sort to
	// take its last packet.
	frozen  atomic.Pointer[chan struct{}]
	closing chan struct{}
}

// packetQueue is how many packets wait for memberlist's handler: a few
// hundred milliseconds of a large cluster's gossip.
const packetQueue = 256

// newTransport listens on the bind address. markerFailed reports a marker
// (inbox.go) that could not be sent to this member's own socket.
func newTransport(bindAddr string, bindPort int, logger *log.Logger, fence func([]byte, net.Addr),
	markerFailed func(error)) (*transport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{bindAddr},
		BindPort:  bindPort,
		Logger:    logger,
	})
	if err != nil {
		return nil, err
	}
	self, err := selfAddr(bindAddr, nt.GetAutoBindPort())
	if err != nil {
		_ = nt.Shutdown() // the error that matters is err
		return nil, err
	}
	in, err := newInbox(func(b []byte) error { _, err := nt.WriteTo(b, self); return err }, markerFailed)
	if err != nil {
		_ = nt.Shutdown()
		return nil, err
	}
	t := &transport{NetTransport: nt, fence: fence, inbox: in, self: self, packets: make(chan *memberlist.Packet, packetQueue),
		done: make(chan struct{}), closing: make(chan struct{})}
	t.wg.Go(t.sort)
	return t, nil
}

// sort hands memberlist its packets, fence the declared-dead ones and the
// inbox this member's markers.
func (t *transport) sort() {
	in := t.NetTransport.PacketCh()
	for {
		if thaw := t.frozen.Load(); thaw != nil {
			select {
			case <-*thaw:
			case <-t.closing:
			case <-t.done:
				return
			}
		}
		select {
		case <-t.done:
			return
		case p := <-in:
			if isFence(p.Buf) {
				t.fence(p.Buf, p.From)
				continue
			}
			if t.inbox.take(p.Buf) {
				continue
			}
			select {
			case t.packets <- p:
			default:
				t.dropped.Add(1)
			}
		}
	}
}

func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// Shutdown closes the sockets and stops the sorting goroutine. memberlist
// calls it once; a second call (after a failed Create) does nothing.
func (t *transport) Shutdown() error {
	var err error
	t.once.Do(func() {
		close(t.closing)
		t.inbox.stop()
		err = t.NetTransport.Shutdown()
		close(t.done)
		t.wg.Wait()
	})
	return err
}

func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.count(len(b))
	return t.NetTransport.WriteTo(b, addr)
}

func (t *transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	t.count(len(b))
	return t.NetTransport.WriteToAddress(b, a)
}

// DialAddressTimeout is memberlist's, but fails while frozen: a frozen
// member's TCP fallback ping must not succeed where its UDP one cannot.
func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.frozen.Load() != nil {
		return nil, errFrozen
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}

var errFrozen = errors.New("transport frozen by a test")

func (t *transport) count(n int) {
	t.sent.Add(1)
	t.sentBytes.Add(uint64(n))
}
