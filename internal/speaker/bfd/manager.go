package bfd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Options configure a Manager. The zero value runs real sockets on the
// real clock with no metrics registered and no one told of changes.
type Options struct {
	// OnStateChange is called for every session state change, in order,
	// one call at a time, from a goroutine the Manager owns. It should
	// return quickly; the changes queue up behind it.
	OnStateChange func(Event)
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Clock drives every timer; tests pass a fake one.
	Clock clock.Clock
	// Listen opens the connection of each family in Start; ListenUDP by
	// default.
	Listen ListenFunc
	// Rand draws discriminators and jitter; seeded at random by default.
	Rand rand.Source
}

// Manager runs many BFD sessions over one PacketConn per address family.
// Sessions may be added before Start; they send once it runs. All methods
// are safe for concurrent use.
type Manager struct {
	log     logr.Logger
	clock   clock.Clock
	listen  ListenFunc
	notify  func(Event)
	metrics *metrics

	// kick wakes the timer loop when the earliest deadline may have
	// moved; eventsReady wakes the event dispatcher.
	kick        chan struct{}
	eventsReady chan struct{}

	mu      sync.Mutex
	started bool
	// running while Start runs; run is its context, and readers the
	// goroutines reading its connections, which it waits for. A Transport
	// is opened when the first session that uses it needs it.
	running  bool
	run      context.Context
	readers  sync.WaitGroup
	rnd      *rand.Rand
	conns    map[Transport]PacketConn
	sessions map[Key]*entry
	byDiscr  map[uint32]*entry
	byAddr   map[addrPair][]*entry
	timers   deadlines
	events   []Event
	buf      []byte
}

// entry is one session with its bookkeeping.
type entry struct {
	key     Key
	tr      Transport
	s       *session
	metrics peerMetrics
	// ifIndex is Interface resolved in the connection's namespace; zero
	// until resolved, and again after the session timed out (the
	// interface may have been re-created).
	ifIndex int
	// leaving: RemoveSession was called; the session says AdminDown for a
	// while before it is forgotten.
	leaving bool
	// sendFailing keeps a failing socket from logging every packet.
	sendFailing bool
	due         time.Time
	heapIndex   int
}

// addrPair finds the session of a packet whose Your Discriminator is zero.
type addrPair struct{ local, remote netip.Addr }

// NewManager returns a Manager; Start runs it.
func NewManager(log logr.Logger, opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Listen == nil {
		opts.Listen = ListenUDP
	}
	if opts.Rand == nil {
		opts.Rand = rand.NewPCG(rand.Uint64(), rand.Uint64())
	}
	if opts.OnStateChange == nil {
		opts.OnStateChange = func(Event) {}
	}
	return &Manager{
		log:         log,
		clock:       opts.Clock,
		listen:      opts.Listen,
		notify:      opts.OnStateChange,
		metrics:     newMetrics(log, opts.Registerer),
		kick:        make(chan struct{}, 1),
		eventsReady: make(chan struct{}, 1),
		rnd:         rand.New(opts.Rand),
		sessions:    map[Key]*entry{},
		byDiscr:     map[uint32]*entry{},
		byAddr:      map[addrPair][]*entry{},
		buf:         make([]byte, 0, ControlPacketLen),
	}
}

// AddSession starts a session in Down; an active one sends at once, a
// passive one waits for the peer. Adding a key that exists fails with
// ErrSessionExists, unless that session is still saying AdminDown after
// RemoveSession: then it is dropped and this one replaces it.
func (m *Manager) AddSession(ctx context.Context, p Peer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := p.Key().normalize()
	if err != nil {
		return err
	}
	prof, err := p.Profile.withDefaults()
	if err != nil {
		return fmt.Errorf("BFD peer %s: %w", k, err)
	}
	m.warnEcho(k, prof)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.sessions[k]; old != nil {
		if !old.leaving {
			return fmt.Errorf("%w: %s", ErrSessionExists, k)
		}
		m.forget(old)
	}
	// A Transport that cannot be opened (a VRF device that does not
	// exist, a port in use) fails the call, so the caller can retry.
	if _, err := m.connFor(k.transport()); err != nil {
		return fmt.Errorf("BFD peer %s: %w", k, err)
	}
	now := m.clock.Now()
	e := &entry{key: k, tr: k.transport(), metrics: m.metrics.forPeer(k), heapIndex: -1}
	e.s = newSession(now, m.newDiscriminator(), prof, m.rnd.Float64)
	e.metrics.up.Set(0)
	m.sessions[k] = e
	m.byDiscr[e.s.localDiscr] = e
	pair := addrPair{k.Local, k.Remote}
	m.byAddr[pair] = append(m.byAddr[pair], e)
	m.apply(e, e.s.tick(now))
	return nil
}

// RemoveSession stops a session: it goes AdminDown at once (an Event
// reports it) and keeps telling the peer so for one detection time, then
// is forgotten. Removing an unknown or already removed key fails with
// ErrNoSession.
func (m *Manager) RemoveSession(ctx context.Context, k Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(k)
	if err != nil {
		return err
	}
	e.leaving = true
	m.apply(e, e.s.shutdown(m.clock.Now()))
	return nil
}

// Update gives a session a new profile. Timer changes reach the peer
// through a Poll Sequence and apply as RFC 5880 6.8.3 allows; the
// session stays in its state.
func (m *Manager) Update(ctx context.Context, k Key, p Profile) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	prof, err := p.withDefaults()
	if err != nil {
		return fmt.Errorf("BFD peer %s: %w", k, err)
	}
	m.warnEcho(k, prof)
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(k)
	if err != nil {
		return err
	}
	m.apply(e, e.s.update(m.clock.Now(), prof))
	return nil
}

func (m *Manager) warnEcho(k Key, p Profile) {
	if p.EchoMode {
		m.log.Info("BFD echo mode is not implemented; the session runs without it", "peer", k.String())
	}
}

// Status reports one session; false when there is none (removed
// sessions are gone at once, even while they still say AdminDown).
func (m *Manager) Status(k Key) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(k)
	if err != nil {
		return Status{}, false
	}
	return e.s.status(e.key), true
}

// Sessions reports every session, ordered by key.
func (m *Manager) Sessions() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Status
	for _, e := range m.sessions {
		if !e.leaving {
			out = append(out, e.s.status(e.key))
		}
	}
	slices.SortFunc(out, func(a, b Status) int { return compareKeys(a.Peer, b.Peer) })
	return out
}

func compareKeys(a, b Key) int {
	if c := a.Local.Compare(b.Local); c != 0 {
		return c
	}
	if c := a.Remote.Compare(b.Remote); c != 0 {
		return c
	}
	switch {
	case a.Interface < b.Interface:
		return -1
	case a.Interface > b.Interface:
		return 1
	}
	return 0
}

// lookup finds a live session. m.mu is held.
func (m *Manager) lookup(k Key) (*entry, error) {
	nk, err := k.normalize()
	if err != nil {
		return nil, err
	}
	e := m.sessions[nk]
	if e == nil || e.leaving {
		return nil, fmt.Errorf("%w: %s", ErrNoSession, nk)
	}
	return e, nil
}

// newDiscriminator draws a random nonzero discriminator no session uses
// (RFC 5880 6.8.1 asks for unique and recommends random). m.mu is held.
func (m *Manager) newDiscriminator() uint32 {
	for {
		if d := m.rnd.Uint32(); d != 0 && m.byDiscr[d] == nil {
			return d
		}
	}
}

// forget drops a session entirely. m.mu is held.
func (m *Manager) forget(e *entry) {
	delete(m.sessions, e.key)
	delete(m.byDiscr, e.s.localDiscr)
	pair := addrPair{e.key.Local, e.key.Remote}
	if rest := slices.DeleteFunc(m.byAddr[pair], func(o *entry) bool { return o == e }); len(rest) > 0 {
		m.byAddr[pair] = rest
	} else {
		delete(m.byAddr, pair)
	}
	m.unschedule(e)
	m.metrics.forget(e.metrics)
}

// apply carries out what a session asked for: send its packet, report
// its change, wait for its next deadline. m.mu is held.
func (m *Manager) apply(e *entry, out output) {
	if out.packet != nil {
		m.send(e, out.packet)
	}
	if out.change != nil {
		m.changed(e, *out.change)
	}
	m.schedule(e)
}

func (m *Manager) send(e *entry, p *ControlPacket) {
	conn, err := m.connFor(e.tr)
	if err != nil {
		if !e.sendFailing {
			m.log.Error(err, "open the BFD sockets; retrying with each packet due", "peer", e.key.String())
		}
		e.sendFailing = true
		return
	}
	if conn == nil {
		return // not started yet
	}
	b, err := p.Append(m.buf[:0])
	if err != nil {
		m.log.Error(err, "encode BFD packet", "peer", e.key.String())
		return
	}
	to := PacketInfo{Local: e.key.Local, Remote: e.key.Remote}
	if e.key.Interface != "" {
		if to.IfIndex = m.interfaceIndex(e); to.IfIndex == 0 {
			return
		}
	}
	if err := conn.WritePacket(b, to); err != nil {
		if !e.sendFailing {
			m.log.Error(err, "send BFD packet", "peer", e.key.String())
		}
		e.sendFailing = true
		e.ifIndex = 0
		return
	}
	if e.sendFailing {
		m.log.Info("sending BFD packets again", "peer", e.key.String())
	}
	e.sendFailing = false
	e.metrics.output.Inc()
}

// interfaceIndex resolves the session's interface, zero when it does not
// exist. m.mu is held.
func (m *Manager) interfaceIndex(e *entry) int {
	if e.ifIndex != 0 {
		return e.ifIndex
	}
	conn := m.conns[e.tr]
	if conn == nil {
		return 0
	}
	idx, err := conn.InterfaceIndex(e.key.Interface)
	if err != nil {
		if !e.sendFailing {
			m.log.Error(err, "BFD session's interface not found", "peer", e.key.String())
		}
		e.sendFailing = true
		return 0
	}
	e.ifIndex = idx
	return idx
}

func (m *Manager) changed(e *entry, t transition) {
	if t.to == Up {
		e.metrics.up.Set(1)
		e.metrics.upEvents.Inc()
	}
	if t.from == Up {
		e.metrics.up.Set(0)
		e.metrics.downEvent.Inc()
	}
	if t.diag == DiagControlDetectionTimeExpired {
		e.ifIndex = 0
	}
	ev := Event{Peer: e.key, Old: t.from, New: t.to, Diag: t.diag, RemoteState: e.s.remoteState, RemoteDiag: e.s.remoteDiag}
	m.log.Info("BFD session changed state", "peer", e.key.String(), "from", t.from.String(), "to", t.to.String(),
		"diag", t.diag.String(), "remoteState", ev.RemoteState.String(), "remoteDiag", ev.RemoteDiag.String())
	m.events = append(m.events, ev)
	select {
	case m.eventsReady <- struct{}{}:
	default:
	}
}

// errStarted: Start runs once.
var errStarted = errors.New("BFD manager already started")
