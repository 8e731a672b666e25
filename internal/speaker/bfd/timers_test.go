package bfd

import (
	"testing"
	"time"
)

// Timer changes and the Poll Sequence (RFC 5880 6.5, 6.8.3), and the rules
// for periodic packets (6.8.7).

func TestPollAndFinal(t *testing.T) {
	t.Run("going up polls until the final", func(t *testing.T) {
		m := newMachine(t, Profile{}, nil)
		m.recv(0, peer(Down))
		m.recv(0, peer(Up))
		if p := m.last(); p.State != Up || !p.Poll || p.Final {
			t.Fatalf("Up announcement %+v, want Poll", p)
		}
		m.advance(time.Second)
		if p := m.last(); !p.Poll {
			t.Errorf("periodic packet without Final received: Poll %v, want true", p.Poll)
		}
		m.recv(0, peer(Up, final))
		m.clear()
		m.advance(time.Second)
		if p := m.last(); p.Poll || p.Final {
			t.Errorf("after the Final: %+v, want neither P nor F", p)
		}
	})
	t.Run("a poll is answered at once with a final", func(t *testing.T) {
		m := in(t, Up, Profile{})
		m.advance(time.Millisecond)
		out := m.recv(time.Millisecond, peer(Up, poll))
		if out.packet == nil || !out.packet.Final || out.packet.Poll {
			t.Fatalf("answer %+v, want F set and P clear", out.packet)
		}
		if m.sentAt[len(m.sentAt)-1] != m.now {
			t.Error("answer not sent at once")
		}
	})
	t.Run("a poll while down is answered too", func(t *testing.T) {
		m := newMachine(t, Profile{}, nil)
		out := m.recv(time.Millisecond, peer(Down, poll))
		if out.packet == nil || !out.packet.Final || out.packet.State != Init {
			t.Fatalf("answer %+v, want a Final in Init", out.packet)
		}
	})
	t.Run("a longer transmit interval waits for the final", func(t *testing.T) {
		m := in(t, Up, Profile{})
		m.record(m.s.update(m.now, withDefaults(t, Profile{TransmitInterval: 600 * time.Millisecond})))
		if m.s.txInterval() != 300*time.Millisecond {
			t.Errorf("interval before the Final %v, want the old 300ms", m.s.txInterval())
		}
		if len(m.sent) != 0 {
			t.Errorf("update sent %d extra packets, want the change on the periodic ones", len(m.sent))
		}
		m.advance(300 * time.Millisecond)
		if p := m.last(); !p.Poll || p.DesiredMinTxInterval != 600*time.Millisecond {
			t.Errorf("periodic packet %+v, want Poll advertising 600ms", p)
		}
		m.recv(0, peer(Up, final))
		if m.s.txInterval() != 600*time.Millisecond {
			t.Errorf("interval after the Final %v, want 600ms", m.s.txInterval())
		}
	})
	t.Run("a shorter transmit interval applies at once", func(t *testing.T) {
		m := in(t, Up, Profile{TransmitInterval: 600 * time.Millisecond})
		m.record(m.s.update(m.now, withDefaults(t, Profile{TransmitInterval: 100 * time.Millisecond})))
		if m.s.txInterval() != 300*time.Millisecond { // the peer's RX
			t.Errorf("interval %v, want the peer's 300ms at once", m.s.txInterval())
		}
	})
	t.Run("a shorter receive interval keeps the old detection time until the final", func(t *testing.T) {
		m := in(t, Up, Profile{ReceiveInterval: 900 * time.Millisecond})
		m.record(m.s.update(m.now, withDefaults(t, Profile{ReceiveInterval: 100 * time.Millisecond})))
		m.recv(100*time.Millisecond, peer(Up))
		if got := m.s.detectionTime(); got != 2700*time.Millisecond {
			t.Errorf("detection time before the Final %v, want 3 x 900ms", got)
		}
		m.recv(100*time.Millisecond, peer(Up, final))
		if got := m.s.detectionTime(); got != 900*time.Millisecond {
			t.Errorf("detection time after the Final %v, want 3 x 300ms (the peer's TX)", got)
		}
	})
	t.Run("a longer receive interval lengthens the detection time at once", func(t *testing.T) {
		m := in(t, Up, Profile{})
		m.record(m.s.update(m.now, withDefaults(t, Profile{ReceiveInterval: time.Second})))
		m.recv(100*time.Millisecond, peer(Up))
		if got := m.s.detectionTime(); got != 3*time.Second {
			t.Errorf("detection time %v, want 3s at once", got)
		}
	})
	t.Run("a change during a poll needs a fresh poll", func(t *testing.T) {
		m := in(t, Up, Profile{})
		m.record(m.s.update(m.now, withDefaults(t, Profile{TransmitInterval: 500 * time.Millisecond})))
		m.record(m.s.update(m.now, withDefaults(t, Profile{TransmitInterval: 700 * time.Millisecond})))
		m.recv(100*time.Millisecond, peer(Up, final))
		if m.s.txInterval() != 300*time.Millisecond {
			t.Errorf("a Final that may answer the first Poll applied %v", m.s.txInterval())
		}
		m.clear()
		m.advance(400 * time.Millisecond)
		if len(m.sent) != 0 && m.last().Poll {
			t.Errorf("polled again before a packet without F arrived")
		}
		m.recv(0, peer(Up))
		m.advance(400 * time.Millisecond)
		if p := m.last(); !p.Poll || p.DesiredMinTxInterval != 700*time.Millisecond {
			t.Errorf("after a plain packet: %+v, want a new Poll for 700ms", p)
		}
		m.recv(0, peer(Up, final))
		if m.s.txInterval() != 700*time.Millisecond {
			t.Errorf("interval after the second Final %v, want 700ms", m.s.txInterval())
		}
	})
}

func withDefaults(t *testing.T, p Profile) Profile {
	t.Helper()
	p, err := p.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPeriodicRules(t *testing.T) {
	t.Run("peer in demand mode gets no periodic packets", func(t *testing.T) {
		m := in(t, Up, Profile{})
		m.recv(0, peer(Up, func(p *ControlPacket) { p.Demand = true }))
		m.clear()
		m.advance(200 * time.Millisecond)
		if len(m.sent) != 0 {
			t.Errorf("%d periodic packets to a peer in Demand mode", len(m.sent))
		}
		// Our own Poll Sequence still goes out.
		m.record(m.s.update(m.now, withDefaults(t, Profile{TransmitInterval: 200 * time.Millisecond})))
		m.advance(time.Second)
		if len(m.sent) == 0 || !m.last().Poll {
			t.Errorf("no Poll to a peer in Demand mode")
		}
	})
	t.Run("peer wanting no packets gets only finals", func(t *testing.T) {
		m := in(t, Up, Profile{})
		m.recv(0, peer(Up, func(p *ControlPacket) { p.RequiredMinRxInterval = 0 }))
		m.clear()
		m.advance(200 * time.Millisecond)
		if len(m.sent) != 0 {
			t.Errorf("%d periodic packets to a peer with Required Min RX 0", len(m.sent))
		}
		if out := m.recv(0, peer(Up, poll, func(p *ControlPacket) { p.RequiredMinRxInterval = 0 })); out.packet == nil || !out.packet.Final {
			t.Errorf("Poll not answered: %+v", out.packet)
		}
	})
	t.Run("a peer lowering its receive interval is honoured at once", func(t *testing.T) {
		m := in(t, Up, Profile{TransmitInterval: 10 * time.Millisecond})
		m.recv(0, peer(Up, func(p *ControlPacket) { p.RequiredMinRxInterval = 2 * time.Second }))
		m.advance(100 * time.Millisecond)
		m.clear()
		m.recv(0, peer(Up, func(p *ControlPacket) { p.RequiredMinRxInterval = 20 * time.Millisecond }))
		m.advance(time.Millisecond)
		if len(m.sent) != 1 {
			t.Errorf("%d packets right after the peer cut its interval to 20ms from 2s, want the overdue one", len(m.sent))
		}
	})
}
