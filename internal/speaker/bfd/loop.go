package bfd

import (
	"container/heap"
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// readErrorBackoff keeps a socket that fails every read from spinning.
const readErrorBackoff = 100 * time.Millisecond

// Start opens the single-hop PacketConn of each family and runs the
// sessions until ctx ends: a reader per connection (connections of other
// Transports are opened when a session needs them, and read the same
// way), one timer loop for all deadlines, one dispatcher for events. It
// returns once they have all stopped and the connections are closed; an
// error when the IPv4 connection could not be opened (a host without
// IPv6 runs IPv4 only). Start runs once. Sessions just stop when it
// returns, without AdminDown: their peers time out, as they would after
// a crash.
func (m *Manager) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := m.open(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.runTimers(ctx) })
	wg.Go(func() { m.dispatch(ctx) })
	<-ctx.Done()
	m.mu.Lock()
	m.running = false
	conns := m.conns
	m.conns = nil
	m.mu.Unlock()
	for _, c := range conns {
		c.Close() // unblocks the readers
	}
	m.readers.Wait()
	wg.Wait()
	return nil
}

func (m *Manager) open(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errStarted
	}
	m.started, m.running, m.run = true, true, ctx
	m.conns = map[Transport]PacketConn{}
	for _, f := range []Family{IPv4, IPv6} {
		_, err := m.connFor(Transport{Family: f})
		if f == IPv6 && errors.Is(err, syscall.EAFNOSUPPORT) {
			m.log.Info("IPv6 is not available; running IPv4 BFD sessions only")
			continue
		}
		if err != nil {
			m.running = false
			for _, c := range m.conns {
				c.Close()
			}
			m.conns = nil
			return err
		}
	}
	// Sessions added before Start had no socket: their first packets are
	// due now.
	now := m.clock.Now()
	for _, e := range m.sessions {
		m.apply(e, e.s.tick(now))
	}
	return nil
}

// connFor returns the connection of t, opening it (and starting its
// reader) when none is open yet; nil without an error before Start or
// after it ended. m.mu is held.
func (m *Manager) connFor(t Transport) (PacketConn, error) {
	if c := m.conns[t]; c != nil || !m.running {
		return c, nil
	}
	c, err := m.listen(t)
	if err != nil {
		return nil, err
	}
	m.conns[t] = c
	ctx := m.run
	m.readers.Go(func() { m.read(ctx, t, c) })
	return c, nil
}

// read receives the packets of one Transport until its connection
// closes.
func (m *Manager) read(ctx context.Context, t Transport, c PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, info, err := c.ReadPacket(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			m.log.Error(err, "read BFD packet", "transport", t.String())
			select {
			case <-ctx.Done():
				return
			case <-m.clock.After(readErrorBackoff):
			}
			continue
		}
		m.handle(buf[:n], info, t)
	}
}

// handle checks and demultiplexes one received datagram (RFC 5880 6.8.6,
// RFC 5881 sections 4 and 5, RFC 5883 section 5) and hands it to its
// session. A single-hop packet must carry TTL 255, checked before
// anything else; a multi-hop one at least its session's MinimumTTL,
// checked once its session is known.
func (m *Manager) handle(b []byte, info PacketInfo, t Transport) {
	if !t.MultiHop && info.TTL != SingleHopTTL {
		m.discard(discardTTL, nil, info)
		return
	}
	p, err := Decode(b)
	if err != nil {
		reason := discardMalformed
		if errors.Is(err, ErrAuthentication) {
			reason = discardAuth
		}
		m.discard(reason, err, info)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.demux(p, info, t)
	if e == nil {
		m.discard(discardNoSession, nil, info)
		return
	}
	if t.MultiHop && info.TTL < int(e.s.profile.MinimumTTL) {
		m.discard(discardTTL, nil, info)
		return
	}
	e.metrics.input.Inc()
	m.apply(e, e.s.receive(m.clock.Now(), p))
}

func (m *Manager) discard(reason string, err error, info PacketInfo) {
	m.metrics.discarded.WithLabelValues(reason).Inc()
	m.log.V(1).Info("discarded BFD packet", "reason", reason, "error", err,
		"from", info.Remote.String(), "to", info.Local.String(), "ifindex", info.IfIndex, "ttl", info.TTL)
}

// demux finds the session a packet belongs to: by Your Discriminator when
// the peer knows it, else by addresses (RFC 5880 6.8.6). Either way the
// packet must come from the session's peer to its local address, on the
// session's Transport, through its interface if it has one. m.mu is
// held.
func (m *Manager) demux(p ControlPacket, info PacketInfo, t Transport) *entry {
	if p.YourDiscriminator != 0 {
		e := m.byDiscr[p.YourDiscriminator]
		if e == nil || e.tr != t || e.key.Local != info.Local || e.key.Remote != info.Remote || !m.arrivedOn(e, info.IfIndex) {
			return nil
		}
		return e
	}
	for _, e := range m.byAddr[addrPair{info.Local, info.Remote}] {
		if e.tr == t && m.arrivedOn(e, info.IfIndex) {
			return e
		}
	}
	return nil
}

func (m *Manager) arrivedOn(e *entry, ifIndex int) bool {
	if e.key.Interface == "" {
		return true
	}
	if idx := m.interfaceIndex(e); idx == ifIndex {
		return true
	}
	// The interface may have been re-created under a new index.
	e.ifIndex = 0
	return m.interfaceIndex(e) == ifIndex
}

// runTimers sleeps until the earliest session deadline and runs every
// deadline that has passed.
func (m *Manager) runTimers(ctx context.Context) {
	timer := m.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		m.mu.Lock()
		next, ok := m.timers.earliest()
		wait := next.Sub(m.clock.Now())
		m.mu.Unlock()
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		var fired <-chan time.Time
		if ok {
			timer.Reset(max(wait, 0))
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-fired:
			m.fire()
		}
	}
}

// fire runs the sessions whose deadline has passed.
func (m *Manager) fire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for {
		e, ok := m.timers.due(now)
		if !ok {
			return
		}
		m.apply(e, e.s.tick(now))
		switch {
		case e.s.finished(now):
			m.forget(e)
		case e.heapIndex >= 0 && !e.due.After(now):
			// A tick always moves the deadline on; if one did not, drop
			// it rather than spin under the lock.
			m.log.Error(nil, "BFD session deadline did not advance", "peer", e.key.String(), "due", e.due)
			m.unschedule(e)
		}
	}
}

// dispatch hands queued events to OnStateChange, outside the lock.
func (m *Manager) dispatch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			m.deliver()
			return
		case <-m.eventsReady:
			m.deliver()
		}
	}
}

func (m *Manager) deliver() {
	for {
		m.mu.Lock()
		evs := m.events
		m.events = nil
		m.mu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			m.notify(ev)
		}
	}
}

// schedule files e under its next deadline and wakes the timer loop.
// m.mu is held.
func (m *Manager) schedule(e *entry) {
	dl := e.s.deadline()
	switch {
	case dl.IsZero():
		m.unschedule(e)
		return
	case e.heapIndex >= 0:
		e.due = dl
		heap.Fix(&m.timers, e.heapIndex)
	default:
		e.due = dl
		heap.Push(&m.timers, e)
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *Manager) unschedule(e *entry) {
	if e.heapIndex >= 0 {
		heap.Remove(&m.timers, e.heapIndex)
	}
}

// deadlines is a min-heap of sessions by next deadline, so the timer loop
// finds the earliest in O(1) and a session moves in O(log n).
type deadlines []*entry

var _ heap.Interface = (*deadlines)(nil)

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].due.Before(d[j].due) }
func (d deadlines) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].heapIndex, d[j].heapIndex = i, j
}

func (d *deadlines) Push(x any) {
	e := x.(*entry)
	e.heapIndex = len(*d)
	*d = append(*d, e)
}

func (d *deadlines) Pop() any {
	old := *d
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*d = old[:len(old)-1]
	e.heapIndex = -1
	return e
}

func (d deadlines) earliest() (time.Time, bool) {
	if len(d) == 0 {
		return time.Time{}, false
	}
	return d[0].due, true
}

// due returns a session whose deadline is at or before now.
func (d deadlines) due(now time.Time) (*entry, bool) {
	if len(d) == 0 || d[0].due.After(now) {
		return nil, false
	}
	return d[0], true
}
