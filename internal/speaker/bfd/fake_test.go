package bfd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeNet is an in-memory network: a datagram written on one fakeConn is
// queued on the conn of the same family whose host owns the destination.
// It knows when every datagram has been handled (the reader came back for
// the next one), which lets tests step a fake clock deterministically.
type fakeNet struct {
	mu    sync.Mutex
	cond  *sync.Cond
	conns []*fakeConn
	cut   bool // drop every datagram, as a dead link would
	ttl   int  // TTL delivered datagrams carry
}

func newFakeNet() *fakeNet {
	n := &fakeNet{ttl: SingleHopTTL}
	n.cond = sync.NewCond(&n.mu)
	return n
}

// fakeHost is one machine on the fake network, with one interface.
type fakeHost struct {
	net     *fakeNet
	addrs   []netip.Addr
	ifName  string
	ifIndex int
}

func (n *fakeNet) host(ifIndex int, addrs ...string) *fakeHost {
	h := &fakeHost{net: n, ifName: "eth0", ifIndex: ifIndex}
	for _, a := range addrs {
		h.addrs = append(h.addrs, netip.MustParseAddr(a))
	}
	return h
}

// Listen is the host's ListenFunc.
func (h *fakeHost) Listen(t Transport) (PacketConn, error) {
	c := &fakeConn{host: h, tr: t}
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	h.net.conns = append(h.net.conns, c)
	return c, nil
}

type datagram struct {
	b    []byte
	info PacketInfo
}

type fakeConn struct {
	host *fakeHost
	tr   Transport
	// Guarded by host.net.mu.
	queue  []datagram
	busy   bool // the last datagram read is still being handled
	closed bool
	sent   []datagram
}

var _ PacketConn = (*fakeConn)(nil)

func (c *fakeConn) ReadPacket(b []byte) (int, PacketInfo, error) {
	n := c.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	c.busy = false
	n.cond.Broadcast()
	for len(c.queue) == 0 && !c.closed {
		n.cond.Wait()
	}
	if c.closed {
		return 0, PacketInfo{}, net.ErrClosed
	}
	d := c.queue[0]
	c.queue = c.queue[1:]
	c.busy = true
	return copy(b, d.b), d.info, nil
}

func (c *fakeConn) WritePacket(b []byte, to PacketInfo) error {
	n := c.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	c.sent = append(c.sent, datagram{b: slices.Clone(b), info: to})
	if n.cut {
		return nil
	}
	for _, dst := range n.conns {
		if dst.tr == c.tr && !dst.closed && slices.Contains(dst.host.addrs, to.Remote) {
			dst.queue = append(dst.queue, datagram{b: slices.Clone(b), info: PacketInfo{
				Local: to.Remote, Remote: to.Local, IfIndex: dst.host.ifIndex, TTL: n.ttl,
			}})
			n.cond.Broadcast()
		}
	}
	return nil
}

func (c *fakeConn) InterfaceIndex(name string) (int, error) {
	if name != c.host.ifName {
		return 0, fmt.Errorf("no interface %q", name)
	}
	return c.host.ifIndex, nil
}

func (c *fakeConn) Close() error {
	n := c.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	c.closed = true
	n.cond.Broadcast()
	return nil
}

// inject queues a datagram on conn as if it had arrived.
func (c *fakeConn) inject(b []byte, info PacketInfo) {
	n := c.host.net
	n.mu.Lock()
	defer n.mu.Unlock()
	c.queue = append(c.queue, datagram{b: b, info: info})
	n.cond.Broadcast()
}

func (c *fakeConn) sentPackets(t *testing.T) []ControlPacket {
	t.Helper()
	c.host.net.mu.Lock()
	defer c.host.net.mu.Unlock()
	var out []ControlPacket
	for _, d := range c.sent {
		p, err := Decode(d.b)
		if err != nil {
			t.Fatalf("sent an undecodable packet: %v", err)
		}
		out = append(out, p)
	}
	return out
}

// quiet: every datagram has been read and handled.
func (n *fakeNet) quiet() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		if !c.closed && (len(c.queue) > 0 || c.busy) {
			return false
		}
	}
	return true
}

func (n *fakeNet) setCut(cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = cut
}

// node is a Manager on a fake host, with its events and metrics.
type node struct {
	m      *Manager
	host   *fakeHost
	reg    *prometheus.Registry
	mu     sync.Mutex
	events []Event
}

func (n *node) record(ev Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
}

func (n *node) eventLog() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

func (n *node) conn(t *testing.T, f Family) *fakeConn { return n.connOf(t, Transport{Family: f}) }

func (n *node) connOf(t *testing.T, tr Transport) *fakeConn {
	t.Helper()
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	c, ok := n.m.conns[tr].(*fakeConn)
	if !ok {
		t.Fatalf("no %s connection", tr)
	}
	return c
}

// lab runs Managers on a fake network with one fake clock.
type lab struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	net   *fakeNet
	nodes []*node
}

func newLab(t *testing.T) *lab {
	return &lab{t: t, clock: clocktesting.NewFakeClock(t0), net: newFakeNet()}
}

// node starts a Manager on a host with the given addresses.
func (l *lab) node(seed uint64, ifIndex int, addrs ...string) *node {
	l.t.Helper()
	n := &node{host: l.net.host(ifIndex, addrs...), reg: prometheus.NewRegistry()}
	n.m = NewManager(testr.New(l.t), Options{
		OnStateChange: n.record,
		Registerer:    n.reg,
		Clock:         l.clock,
		Listen:        n.host.Listen,
		Rand:          rand.NewPCG(seed, seed),
	})
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- n.m.Start(ctx) }()
	l.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			l.t.Errorf("Start: %v", err)
		}
	})
	l.waitFor("manager started", func() bool {
		n.m.mu.Lock()
		defer n.m.mu.Unlock()
		return n.m.conns != nil
	})
	l.nodes = append(l.nodes, n)
	return n
}

// settle waits until every datagram has been handled and every Manager
// with a deadline sleeps on its timer.
func (l *lab) settle() {
	l.t.Helper()
	stable := 0
	l.waitFor("network and timers to settle", func() bool {
		if l.settled() {
			stable++
		} else {
			stable = 0
		}
		return stable >= 3
	})
}

func (l *lab) settled() bool {
	if !l.net.quiet() {
		return false
	}
	sleeping := 0
	for _, n := range l.nodes {
		n.m.mu.Lock()
		pending, kicked := len(n.m.timers) > 0, len(n.m.kick) > 0
		n.m.mu.Unlock()
		if kicked {
			return false
		}
		if pending {
			sleeping++
		}
	}
	return l.clock.Waiters() == sleeping
}

// advance moves the fake clock by d in small steps, settling after each.
func (l *lab) advance(d time.Duration) {
	l.t.Helper()
	const step = 5 * time.Millisecond
	for d > 0 {
		s := min(step, d)
		l.clock.Step(s)
		l.settle()
		d -= s
	}
}

// until advances the clock until cond holds, at most limit.
func (l *lab) until(what string, limit time.Duration, cond func() bool) {
	l.t.Helper()
	for elapsed := time.Duration(0); !cond(); elapsed += 5 * time.Millisecond {
		if elapsed > limit {
			l.t.Fatalf("%s: not within %v", what, limit)
		}
		l.advance(5 * time.Millisecond)
	}
}

// waitFor polls cond in real time: for goroutines to finish their part.
func (l *lab) waitFor(what string, cond func() bool) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			l.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}
