package bfd

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	ourDiscr  = 0x0100
	peerDiscr = 0x0200
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// machine drives one session with a hand-moved clock and records what it
// sends and which states it enters.
type machine struct {
	t       *testing.T
	s       *session
	now     time.Time
	sent    []ControlPacket
	sentAt  []time.Time
	changes []transition
}

func newMachine(t *testing.T, p Profile, jitter func() float64) *machine {
	t.Helper()
	p, err := p.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if jitter == nil {
		jitter = func() float64 { return 0.5 }
	}
	m := &machine{t: t, now: t0}
	m.s = newSession(t0, ourDiscr, p, jitter)
	m.record(m.s.tick(t0))
	return m
}

func (m *machine) record(out output) output {
	if out.packet != nil {
		m.sent = append(m.sent, *out.packet)
		m.sentAt = append(m.sentAt, m.now)
	}
	if out.change != nil {
		m.changes = append(m.changes, *out.change)
	}
	return out
}

// recv delivers a packet from the peer d after the previous event.
func (m *machine) recv(d time.Duration, p ControlPacket) output {
	m.t.Helper()
	m.advance(d)
	return m.record(m.s.receive(m.now, p))
}

// advance moves the clock by d, running every deadline on the way.
func (m *machine) advance(d time.Duration) {
	m.t.Helper()
	end := m.now.Add(d)
	for i := 0; ; i++ {
		dl := m.s.deadline()
		if dl.IsZero() || dl.After(end) {
			break
		}
		if i > 100000 {
			m.t.Fatalf("deadline stuck at %v", dl)
		}
		m.now = dl
		m.record(m.s.tick(m.now))
		if m.s.finished(m.now) {
			break // its owner forgets it here
		}
	}
	m.now = end
}

// last is the last packet sent; it fails the test when none was.
func (m *machine) last() ControlPacket {
	m.t.Helper()
	if len(m.sent) == 0 {
		m.t.Fatal("nothing sent")
	}
	return m.sent[len(m.sent)-1]
}

func (m *machine) clear() { m.sent, m.sentAt, m.changes = nil, nil, nil }

// peer is a packet from the peer in state st, with FRR-like defaults;
// edits adjust it.
func peer(st State, edits ...func(*ControlPacket)) ControlPacket {
	p := ControlPacket{
		State:                 st,
		DetectMult:            3,
		MyDiscriminator:       peerDiscr,
		YourDiscriminator:     ourDiscr,
		DesiredMinTxInterval:  300 * time.Millisecond,
		RequiredMinRxInterval: 300 * time.Millisecond,
	}
	if st == Down || st == AdminDown {
		p.YourDiscriminator = 0
		p.DesiredMinTxInterval = time.Second
	}
	for _, e := range edits {
		e(&p)
	}
	return p
}

func final(p *ControlPacket) { p.Final = true }
func poll(p *ControlPacket)  { p.Poll = true }

// bringUp runs the three-way handshake and confirms our Poll, leaving an
// Up session with nothing pending.
func bringUp(m *machine) {
	m.t.Helper()
	m.recv(0, peer(Down))
	m.recv(10*time.Millisecond, peer(Up))
	if m.s.state != Up {
		m.t.Fatalf("state %s after the handshake, want Up", m.s.state)
	}
	m.recv(10*time.Millisecond, peer(Up, final))
	m.clear()
}

// in returns a session in state st, reached by real events.
func in(t *testing.T, st State, p Profile) *machine {
	t.Helper()
	m := newMachine(t, p, nil)
	switch st {
	case Init:
		m.recv(0, peer(Down))
	case Up:
		bringUp(m)
	case AdminDown:
		m.record(m.s.shutdown(m.now))
	}
	if m.s.state != st {
		t.Fatalf("set-up reached %s, want %s", m.s.state, st)
	}
	m.clear()
	return m
}

func TestTransitions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from     State
		remote   State
		to       State
		diag     Diag
		announce bool // a packet goes out at once
	}{
		{"down hears down", Down, Down, Init, DiagNone, true},
		{"down hears init", Down, Init, Up, DiagNone, true},
		{"down ignores up", Down, Up, Down, DiagNone, false},
		{"down ignores admin down", Down, AdminDown, Down, DiagNone, false},
		{"init hears init", Init, Init, Up, DiagNone, true},
		{"init hears up", Init, Up, Up, DiagNone, true},
		{"init stays on down", Init, Down, Init, DiagNone, false},
		{"init hears admin down", Init, AdminDown, Down, DiagNeighborSignaledDown, true},
		{"up hears down", Up, Down, Down, DiagNeighborSignaledDown, true},
		{"up hears admin down", Up, AdminDown, Down, DiagNeighborSignaledDown, true},
		{"up stays on init", Up, Init, Up, DiagNone, false},
		{"up stays on up", Up, Up, Up, DiagNone, false},
		{"admin down ignores down", AdminDown, Down, AdminDown, DiagAdministrativelyDown, false},
		{"admin down ignores up", AdminDown, Up, AdminDown, DiagAdministrativelyDown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := in(t, tc.from, Profile{})
			out := m.recv(time.Millisecond, peer(tc.remote))
			if m.s.state != tc.to || m.s.localDiag != tc.diag {
				t.Errorf("now %s/%s, want %s/%s", m.s.state, m.s.localDiag, tc.to, tc.diag)
			}
			if got := out.change != nil; got != (tc.from != tc.to) {
				t.Errorf("change reported %v, want %v", out.change, tc.from != tc.to)
			}
			if got := out.packet != nil; got != tc.announce {
				t.Fatalf("packet sent at once: %v, want %v", got, tc.announce)
			}
			if tc.announce {
				p := m.last()
				if p.State != tc.to || p.Diag != tc.diag || p.YourDiscriminator != peerDiscr {
					t.Errorf("announced %s/%s to %#x, want %s/%s to %#x", p.State, p.Diag, p.YourDiscriminator, tc.to, tc.diag, peerDiscr)
				}
			}
		})
	}
}

func TestSlowStartAndNegotiation(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		profile Profile
		remote  func(*ControlPacket)
		// negotiated once Up
		wantTx, wantDetect time.Duration
	}{
		{"defaults both sides", Profile{}, nil, 300 * ms, 900 * ms},
		{"peer receives slower", Profile{}, func(p *ControlPacket) { p.RequiredMinRxInterval = 500 * ms }, 500 * ms, 900 * ms},
		{"we send slower", Profile{TransmitInterval: 800 * ms}, func(p *ControlPacket) { p.RequiredMinRxInterval = 100 * ms }, 800 * ms, 900 * ms},
		{"peer sends slower", Profile{}, func(p *ControlPacket) { p.DesiredMinTxInterval = 400 * ms }, 300 * ms, 1200 * ms},
		{"we receive slower", Profile{ReceiveInterval: 700 * ms}, nil, 300 * ms, 2100 * ms},
		{"peer multiplier", Profile{}, func(p *ControlPacket) { p.DetectMult = 5; p.DesiredMinTxInterval = 200 * ms }, 300 * ms, 1500 * ms},
		{"our multiplier is not the peer's", Profile{DetectMultiplier: 10}, nil, 300 * ms, 900 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, tc.profile, nil)
			first := m.last()
			if first.State != Down || first.DesiredMinTxInterval != time.Second || first.RequiredMinRxInterval != m.s.profile.ReceiveInterval || first.Poll {
				t.Errorf("first packet %+v, want Down advertising 1s TX and the profile's RX, no Poll", first)
			}
			if got := m.s.txInterval(); got != time.Second {
				t.Errorf("transmit interval before Up %v, want 1s", got)
			}
			edit := func(p *ControlPacket) {
				if tc.remote != nil {
					tc.remote(p)
				}
			}
			m.recv(0, peer(Down, edit))
			m.recv(0, peer(Up, edit))
			m.recv(0, peer(Up, edit, final))
			if got := m.s.txInterval(); got != tc.wantTx {
				t.Errorf("transmit interval %v, want %v", got, tc.wantTx)
			}
			if got := m.s.detectionTime(); got != tc.wantDetect {
				t.Errorf("detection time %v, want %v", got, tc.wantDetect)
			}
			if got, want := m.last().DesiredMinTxInterval, m.s.profile.TransmitInterval; got != want {
				t.Errorf("advertised TX once Up %v, want %v", got, want)
			}
		})
	}
}

// TestJitter measures the spacing of periodic packets: 75-100 % of the
// interval, or 75-90 % with a detect multiplier of 1 (RFC 5880 6.8.7).
func TestJitter(t *testing.T) {
	for _, tc := range []struct {
		mult   uint8
		lo, hi float64
	}{{3, 0.75, 1.0}, {1, 0.75, 0.9}} {
		rnd := rand.New(rand.NewPCG(1, uint64(tc.mult)))
		m := newMachine(t, Profile{DetectMultiplier: tc.mult}, rnd.Float64)
		bringUp(m)
		// Keep the peer alive while measuring.
		for range 200 {
			m.recv(250*time.Millisecond, peer(Up))
		}
		iv := float64(m.s.txInterval())
		var lo, hi float64 = 2, 0
		for i := 1; i < len(m.sentAt); i++ {
			f := float64(m.sentAt[i].Sub(m.sentAt[i-1])) / iv
			lo, hi = min(lo, f), max(hi, f)
		}
		if len(m.sentAt) < 100 || lo < tc.lo || hi > tc.hi {
			t.Errorf("mult %d: %d packets spaced %.3f-%.3f of the interval, want within %.2f-%.2f", tc.mult, len(m.sentAt), lo, hi, tc.lo, tc.hi)
		}
		if hi-lo < (tc.hi-tc.lo)/2 {
			t.Errorf("mult %d: spacing %.3f-%.3f barely varies", tc.mult, lo, hi)
		}
	}
}

func TestDetectionTimeout(t *testing.T) {
	for _, tc := range []struct {
		from State
		last ControlPacket // the peer's last packet before it falls silent
		want time.Duration
	}{
		{Init, peer(Down), 3 * time.Second}, // the peer is still slow
		{Up, peer(Up), 900 * time.Millisecond},
	} {
		t.Run(tc.from.String(), func(t *testing.T) {
			m := in(t, tc.from, Profile{})
			m.recv(0, tc.last)
			m.clear()
			if got := m.s.detectionTime(); got != tc.want {
				t.Fatalf("detection time %v, want %v", got, tc.want)
			}
			m.advance(tc.want - time.Nanosecond)
			if len(m.changes) != 0 {
				t.Fatalf("changes before the detection time: %+v", m.changes)
			}
			m.advance(time.Nanosecond)
			if d := cmp.Diff([]transition{{from: tc.from, to: Down, diag: DiagControlDetectionTimeExpired}}, m.changes, cmp.AllowUnexported(transition{})); d != "" {
				t.Fatalf("changes (-want +got):\n%s", d)
			}
			p := m.last()
			if p.State != Down || p.Diag != DiagControlDetectionTimeExpired || p.YourDiscriminator != 0 {
				t.Errorf("sent %s/%s to %#x, want Down/ControlDetectionTimeExpired to 0", p.State, p.Diag, p.YourDiscriminator)
			}
			if m.s.txInterval() != time.Second {
				t.Errorf("transmit interval after going down %v, want the slow 1s", m.s.txInterval())
			}
		})
	}
}

// TestDetectionForgetsSilentPeer: a peer that goes silent while we are
// Down is forgotten after a detection time (6.8.1), without an event.
func TestDetectionForgetsSilentPeer(t *testing.T) {
	m := in(t, Up, Profile{})
	m.recv(0, peer(Down))
	m.clear()
	m.advance(10 * time.Second)
	if len(m.changes) != 0 || m.s.remoteDiscr != 0 {
		t.Errorf("changes %+v, remote discriminator %#x; want none and 0", m.changes, m.s.remoteDiscr)
	}
	if n := len(m.sent); n < 9 || n > 14 {
		t.Errorf("%d packets in 10 s while Down, want one every 0.75-1 s", n)
	}
}

func TestPassive(t *testing.T) {
	m := newMachine(t, Profile{PassiveMode: true}, nil)
	m.advance(10 * time.Second)
	if len(m.sent) != 0 || !m.s.deadline().IsZero() {
		t.Fatalf("passive session sent %d packets, deadline %v; want silence", len(m.sent), m.s.deadline())
	}
	m.recv(0, peer(Down))
	if p := m.last(); p.State != Init || p.YourDiscriminator != peerDiscr {
		t.Errorf("first packet %+v, want Init to the peer", p)
	}
	m.recv(0, peer(Up))
	m.recv(0, peer(Up, final))
	if m.s.state != Up {
		t.Fatalf("state %s, want Up", m.s.state)
	}
	// The peer vanishes: we go Down and, having forgotten its
	// discriminator, fall silent again without telling it.
	m.clear()
	m.advance(time.Minute)
	if d := cmp.Diff([]transition{{from: Up, to: Down, diag: DiagControlDetectionTimeExpired}}, m.changes, cmp.AllowUnexported(transition{})); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if len(m.sent) > 3 {
		t.Errorf("%d packets after the peer vanished, want at most the ones before the timeout", len(m.sent))
	}
	if !m.s.deadline().IsZero() {
		t.Errorf("deadline %v, want silence", m.s.deadline())
	}
}

// TestPeerAdminDown: a peer that stops the session goes AdminDown; we go
// Down saying the neighbor signalled it, and come back when it restarts.
func TestPeerAdminDown(t *testing.T) {
	m := in(t, Up, Profile{})
	m.recv(100*time.Millisecond, peer(AdminDown, func(p *ControlPacket) {
		p.Diag = DiagAdministrativelyDown
		p.YourDiscriminator = ourDiscr
	}))
	if m.s.state != Down || m.s.localDiag != DiagNeighborSignaledDown || m.s.remoteState != AdminDown || m.s.remoteDiag != DiagAdministrativelyDown {
		t.Fatalf("after AdminDown: %s/%s, remote %s/%s", m.s.state, m.s.localDiag, m.s.remoteState, m.s.remoteDiag)
	}
	m.advance(2 * time.Second)
	m.recv(0, peer(Down))
	m.recv(0, peer(Up))
	if m.s.state != Up {
		t.Errorf("state %s after the peer came back, want Up", m.s.state)
	}
}

func TestShutdown(t *testing.T) {
	m := in(t, Up, Profile{})
	out := m.record(m.s.shutdown(m.now))
	if out.change == nil || out.change.to != AdminDown || out.change.diag != DiagAdministrativelyDown {
		t.Fatalf("change %+v, want AdminDown", out.change)
	}
	if p := m.last(); p.State != AdminDown || p.Diag != DiagAdministrativelyDown || p.YourDiscriminator != peerDiscr {
		t.Errorf("sent %+v, want AdminDown to the peer", p)
	}
	m.recv(100*time.Millisecond, peer(Up))
	if m.s.state != AdminDown {
		t.Errorf("state %s after a packet, want AdminDown", m.s.state)
	}
	if m.s.finished(m.now) {
		t.Fatal("finished at once; want a detection time of AdminDown packets")
	}
	m.advance(5 * time.Second)
	if !m.s.finished(m.now) {
		t.Error("not finished after 5 s")
	}
	for _, p := range m.sent {
		if p.State != AdminDown {
			t.Errorf("sent %s while shutting down", p.State)
		}
	}
	if len(m.sent) < 2 {
		t.Errorf("%d AdminDown packets, want the peer told more than once", len(m.sent))
	}
}
