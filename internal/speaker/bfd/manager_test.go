package bfd

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
)

var (
	addrA4, addrB4 = netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	addrA6, addrB6 = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
)

// pair is two Managers with an IPv4 and an IPv6 session to each other.
type pair struct {
	*lab
	a, b *node
	// keys of the sessions on a and on b, IPv4 then IPv6
	ka, kb []Key
}

func newPair(t *testing.T, pa, pb Profile) *pair {
	p := &pair{lab: newLab(t)}
	p.a = p.node(1, 2, "198.51.100.1", "2001:db8::1")
	p.b = p.node(2, 7, "198.51.100.2", "2001:db8::2")
	for _, fam := range [][2]netip.Addr{{addrA4, addrB4}, {addrA6, addrB6}} {
		p.add(p.a, Peer{Local: fam[0], Remote: fam[1], Profile: pa})
		p.add(p.b, Peer{Local: fam[1], Remote: fam[0], Profile: pb})
		p.ka = append(p.ka, Key{Local: fam[0], Remote: fam[1]})
		p.kb = append(p.kb, Key{Local: fam[1], Remote: fam[0]})
	}
	return p
}

func (p *pair) add(n *node, peer Peer) {
	p.t.Helper()
	if err := n.m.AddSession(context.Background(), peer); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pair) states(n *node, keys []Key) []State {
	var out []State
	for _, k := range keys {
		st, ok := n.m.Status(k)
		if !ok {
			out = append(out, 255)
			continue
		}
		out = append(out, st.State)
	}
	return out
}

func (p *pair) all(st State) func() bool {
	return func() bool {
		want := []State{st, st}
		return cmp.Equal(p.states(p.a, p.ka), want) && cmp.Equal(p.states(p.b, p.kb), want)
	}
}

// lastEvent is the newest event of n's session k.
func lastEvent(n *node, k Key) (Event, bool) {
	evs := n.eventLog()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Peer == k {
			return evs[i], true
		}
	}
	return Event{}, false
}

func TestManagerLifecycle(t *testing.T) {
	p := newPair(t, Profile{}, Profile{})
	p.until("sessions up", 5*time.Second, p.all(Up))
	// Let the Poll of going Up finish.
	p.advance(time.Second)

	for i, k := range p.ka {
		st, _ := p.a.m.Status(k)
		if st.TransmitInterval != 300*time.Millisecond || st.DetectionTime != 900*time.Millisecond || st.Polling || st.RemoteState != Up {
			t.Errorf("%s: %+v, want 300ms TX, 900ms detection, no poll, remote Up", k, st)
		}
		peerSt, _ := p.b.m.Status(p.kb[i])
		if st.RemoteDiscriminator != peerSt.LocalDiscriminator || peerSt.RemoteDiscriminator != st.LocalDiscriminator {
			t.Errorf("%s: discriminators %#x/%#x do not match the peer's %#x/%#x", k, st.LocalDiscriminator, st.RemoteDiscriminator, peerSt.LocalDiscriminator, peerSt.RemoteDiscriminator)
		}
		if ev, _ := lastEvent(p.a, k); ev.New != Up || ev.Diag != DiagNone {
			t.Errorf("%s: last event %+v, want Up", k, ev)
		}
	}

	t.Run("cutting the link times both sides out", func(t *testing.T) {
		p.net.setCut(true)
		p.until("sessions down", 2*time.Second, p.all(Down))
		for _, side := range []struct {
			n    *node
			keys []Key
		}{{p.a, p.ka}, {p.b, p.kb}} {
			for _, k := range side.keys {
				ev, _ := lastEvent(side.n, k)
				if want := (Event{Peer: k, Old: Up, New: Down, Diag: DiagControlDetectionTimeExpired, RemoteState: Down}); ev != want {
					t.Errorf("event %+v, want %+v", ev, want)
				}
				if ev.PeerAdminDown() {
					t.Errorf("%s: a timeout reported as the peer's AdminDown", k)
				}
			}
		}
	})
	t.Run("restoring the link brings them back", func(t *testing.T) {
		p.net.setCut(false)
		p.until("sessions up again", 5*time.Second, p.all(Up))
	})
	t.Run("metrics", func(t *testing.T) {
		got := gather(t, p.a)
		for _, peer := range []string{"198.51.100.2", "2001:db8::2"} {
			for name, want := range map[string]float64{"metallb_bfd_session_up": 1, "metallb_bfd_session_up_events": 2, "metallb_bfd_session_down_events": 1} {
				if v := got[name][peer]; v != want {
					t.Errorf("%s{peer=%s} = %g, want %g", name, peer, v, want)
				}
			}
			for _, name := range []string{"metallb_bfd_control_packet_input", "metallb_bfd_control_packet_output"} {
				if v := got[name][peer]; v < 5 {
					t.Errorf("%s{peer=%s} = %g, want several", name, peer, v)
				}
			}
		}
	})
	t.Run("removing a session tells the peer", func(t *testing.T) {
		if err := p.b.m.RemoveSession(context.Background(), p.kb[0]); err != nil {
			t.Fatal(err)
		}
		if _, ok := p.b.m.Status(p.kb[0]); ok {
			t.Error("a removed session still has a status")
		}
		p.settle()
		if ev, _ := lastEvent(p.b, p.kb[0]); ev.New != AdminDown || ev.Diag != DiagAdministrativelyDown {
			t.Errorf("remover's event %+v, want AdminDown", ev)
		}
		ev, _ := lastEvent(p.a, p.ka[0])
		if want := (Event{Peer: p.ka[0], Old: Up, New: Down, Diag: DiagNeighborSignaledDown, RemoteState: AdminDown, RemoteDiag: DiagAdministrativelyDown}); ev != want || !ev.PeerAdminDown() {
			t.Errorf("peer's event %+v, want %+v", ev, want)
		}
		// The remover keeps saying AdminDown for a while, then forgets.
		p.advance(5 * time.Second)
		if st := p.states(p.a, p.ka); st[0] != Down || st[1] != Up {
			t.Errorf("states %v, want the removed one Down and the other Up", st)
		}
		if _, ok := gather(t, p.b)["metallb_bfd_session_up"]["198.51.100.1"]; ok {
			t.Error("metrics of the removed session remain")
		}
		if err := p.b.m.RemoveSession(context.Background(), p.kb[0]); !errors.Is(err, ErrNoSession) {
			t.Errorf("second RemoveSession: %v, want ErrNoSession", err)
		}
	})
	t.Run("adding it back", func(t *testing.T) {
		p.add(p.b, Peer{Local: addrB4, Remote: addrA4})
		p.until("session up again", 5*time.Second, p.all(Up))
	})
}

// gather returns metric name -> peer label -> value.
func gather(t *testing.T, n *node) map[string]map[string]float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		out[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			out[mf.GetName()][label(m, "peer")+label(m, "reason")] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if v := label(m, "vrf"); v != "" && v != "default" {
				t.Errorf("%s: vrf=%q, want default", mf.GetName(), v)
			}
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestManagerPassive(t *testing.T) {
	t.Run("passive comes up with an active peer", func(t *testing.T) {
		p := newPair(t, Profile{PassiveMode: true}, Profile{})
		p.until("sessions up", 5*time.Second, p.all(Up))
	})
	t.Run("two passive sides stay silent", func(t *testing.T) {
		p := newPair(t, Profile{PassiveMode: true}, Profile{PassiveMode: true})
		p.advance(3 * time.Second)
		for _, n := range []*node{p.a, p.b} {
			for _, f := range []Family{IPv4, IPv6} {
				if sent := n.conn(t, f).sentPackets(t); len(sent) != 0 {
					t.Errorf("passive node sent %d %s packets", len(sent), f)
				}
			}
		}
	})
}

func TestManagerUpdate(t *testing.T) {
	p := newPair(t, Profile{}, Profile{})
	p.until("sessions up", 5*time.Second, p.all(Up))
	p.advance(time.Second)
	eventsA, eventsB := len(p.a.eventLog()), len(p.b.eventLog())
	slow := Profile{TransmitInterval: 600 * time.Millisecond, ReceiveInterval: 500 * time.Millisecond, DetectMultiplier: 5}
	if err := p.a.m.Update(context.Background(), p.ka[0], slow); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.a.m.Status(p.ka[0]); !st.Polling {
		t.Errorf("no Poll after a timer change: %+v", st)
	}
	p.until("poll to finish", 2*time.Second, func() bool { st, _ := p.a.m.Status(p.ka[0]); return !st.Polling })
	p.advance(time.Second)
	if st, _ := p.a.m.Status(p.ka[0]); st.State != Up || st.TransmitInterval != 600*time.Millisecond || st.DetectionTime != 1500*time.Millisecond {
		t.Errorf("updater: %+v, want Up, 600ms TX, 3 x 500ms detection", st)
	}
	if st, _ := p.b.m.Status(p.kb[0]); st.State != Up || st.TransmitInterval != 500*time.Millisecond || st.DetectionTime != 3*time.Second {
		t.Errorf("peer: %+v, want Up, 500ms TX, 5 x 600ms detection", st)
	}
	if a, b := p.a.eventLog()[eventsA:], p.b.eventLog()[eventsB:]; len(a)+len(b) != 0 {
		t.Errorf("events after the update: %+v / %+v, want none", a, b)
	}
}

// TestManagerDiscards injects datagrams a session must never see.
func TestManagerDiscards(t *testing.T) {
	p := newPair(t, Profile{}, Profile{})
	p.until("sessions up", 5*time.Second, p.all(Up))
	st, _ := p.b.m.Status(p.kb[0])
	good := ControlPacket{State: Down, DetectMult: 3, MyDiscriminator: st.LocalDiscriminator, YourDiscriminator: st.RemoteDiscriminator,
		DesiredMinTxInterval: time.Second, RequiredMinRxInterval: time.Second}
	from := PacketInfo{Local: addrA4, Remote: addrB4, IfIndex: 2, TTL: 255}
	for _, tc := range []struct {
		name   string
		edit   func(*ControlPacket, *PacketInfo)
		reason string
	}{
		{"a hop away", func(_ *ControlPacket, i *PacketInfo) { i.TTL = 254 }, discardTTL},
		{"no TTL reported", func(_ *ControlPacket, i *PacketInfo) { i.TTL = -1 }, discardTTL},
		{"unknown discriminator", func(c *ControlPacket, _ *PacketInfo) { c.YourDiscriminator++ }, discardNoSession},
		{"known discriminator, wrong source", func(_ *ControlPacket, i *PacketInfo) { i.Remote = netip.MustParseAddr("198.51.100.9") }, discardNoSession},
		{"no discriminator, unknown peer", func(c *ControlPacket, i *PacketInfo) {
			c.YourDiscriminator = 0
			i.Remote = netip.MustParseAddr("198.51.100.9")
		}, discardNoSession},
		{"multipoint", func(c *ControlPacket, _ *PacketInfo) { c.Multipoint = true }, discardMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, info := good, from
			tc.edit(&c, &info)
			b, err := c.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			before := gather(t, p.a)["steadylb_bfd_control_packets_discarded_total"][tc.reason]
			p.a.conn(t, IPv4).inject(b, info)
			p.settle()
			if got := gather(t, p.a)["steadylb_bfd_control_packets_discarded_total"][tc.reason]; got != before+1 {
				t.Errorf("discarded{reason=%s} went %g -> %g, want +1", tc.reason, before, got)
			}
			if st := p.states(p.a, p.ka); st[0] != Up {
				t.Errorf("session %s after a bad Down packet", st[0])
			}
		})
	}
	t.Run("authenticated", func(t *testing.T) {
		b, _ := good.Append(nil)
		b[1] |= flagAuth
		b[3] = 28
		b = append(b, 1, 4, 1, 0) // simple password "" section
		p.a.conn(t, IPv4).inject(b, from)
		p.settle()
		if got := gather(t, p.a)["steadylb_bfd_control_packets_discarded_total"][discardAuth]; got != 1 {
			t.Errorf("discarded{reason=authentication} = %g, want 1", got)
		}
	})
	t.Run("the same packet from the peer is accepted", func(t *testing.T) {
		before := len(p.a.eventLog())
		b, _ := good.Append(nil)
		p.a.conn(t, IPv4).inject(b, from)
		p.settle()
		// The real peer, still Up, brings the session back at once.
		evs := p.a.eventLog()[before:]
		if want := (Event{Peer: p.ka[0], Old: Up, New: Down, Diag: DiagNeighborSignaledDown, RemoteState: Down}); len(evs) == 0 || evs[0] != want {
			t.Errorf("events %+v, want first %+v", evs, want)
		}
	})
}

func TestManagerInterface(t *testing.T) {
	l := newLab(t)
	a := l.node(1, 2, "198.51.100.1")
	b := l.node(2, 7, "198.51.100.2")
	ka := Key{Local: addrA4, Remote: addrB4, Interface: "eth0"}
	for _, tc := range []struct {
		n *node
		p Peer
	}{{a, Peer{Local: addrA4, Remote: addrB4, Interface: "eth0"}}, {b, Peer{Local: addrB4, Remote: addrA4}}} {
		if err := tc.n.m.AddSession(context.Background(), tc.p); err != nil {
			t.Fatal(err)
		}
	}
	l.until("up", 5*time.Second, func() bool { st, _ := a.m.Status(ka); return st.State == Up })
	a.m.mu.Lock()
	sent := a.m.conns[Transport{Family: IPv4}].(*fakeConn).sent
	a.m.mu.Unlock()
	for _, d := range sent {
		if d.info.IfIndex != 2 || d.info.Local != addrA4 {
			t.Fatalf("sent from %s on ifindex %d, want %s on 2", d.info.Local, d.info.IfIndex, addrA4)
		}
	}
	st, _ := b.m.Status(Key{Local: addrB4, Remote: addrA4})
	pkt, _ := ControlPacket{State: Down, DetectMult: 3, MyDiscriminator: st.LocalDiscriminator, YourDiscriminator: st.RemoteDiscriminator}.Append(nil)
	a.conn(t, IPv4).inject(pkt, PacketInfo{Local: addrA4, Remote: addrB4, IfIndex: 3, TTL: 255})
	l.settle()
	if got := gather(t, a)["steadylb_bfd_control_packets_discarded_total"][discardNoSession]; got != 1 {
		t.Errorf("packet from another interface: discarded{no_session} = %g, want 1", got)
	}
}

func TestManagerRejects(t *testing.T) {
	l := newLab(t)
	n := l.node(1, 2, "198.51.100.1")
	ctx := context.Background()
	if err := n.m.AddSession(ctx, Peer{Local: addrA4, Remote: addrB4}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"duplicate", n.m.AddSession(ctx, Peer{Local: addrA4, Remote: addrB4}), ErrSessionExists},
		{"duplicate as 4in6", n.m.AddSession(ctx, Peer{Local: netip.AddrFrom16(addrA4.As16()), Remote: addrB4}), ErrSessionExists},
		{"no local address", n.m.AddSession(ctx, Peer{Remote: addrB4}), ErrPeer},
		{"mixed families", n.m.AddSession(ctx, Peer{Local: addrA4, Remote: addrB6}), ErrPeer},
		{"link-local without interface", n.m.AddSession(ctx, Peer{Local: netip.MustParseAddr("fe80::1"), Remote: netip.MustParseAddr("fe80::2")}), ErrPeer},
		{"zone and interface differ", n.m.AddSession(ctx, Peer{Local: netip.MustParseAddr("fe80::1"), Remote: netip.MustParseAddr("fe80::2%eth1"), Interface: "eth0"}), ErrPeer},
		{"multi-hop through an interface", n.m.AddSession(ctx, Peer{Local: addrA4, Remote: addrB4, Interface: "eth0", MultiHop: true}), ErrPeer},
		{"multi-hop to a link-local peer", n.m.AddSession(ctx, Peer{Local: netip.MustParseAddr("fe80::1"), Remote: netip.MustParseAddr("fe80::2%eth0"), MultiHop: true}), ErrPeer},
		{"interval too short", n.m.AddSession(ctx, Peer{Local: addrA6, Remote: addrB6, Profile: Profile{TransmitInterval: time.Millisecond}}), ErrProfile},
		{"remove unknown", n.m.RemoveSession(ctx, Key{Local: addrA6, Remote: addrB6}), ErrNoSession},
		{"update unknown", n.m.Update(ctx, Key{Local: addrA6, Remote: addrB6}, Profile{}), ErrNoSession},
		{"update with a bad profile", n.m.Update(ctx, Key{Local: addrA4, Remote: addrB4}, Profile{ReceiveInterval: time.Hour}), ErrProfile},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := n.m.AddSession(ctx, Peer{Local: netip.MustParseAddr("fe80::1"), Remote: netip.MustParseAddr("fe80::2%eth0")}); err != nil {
		t.Errorf("link-local with a zone: %v", err)
	}
	if _, ok := n.m.Status(Key{Local: netip.MustParseAddr("fe80::1"), Remote: netip.MustParseAddr("fe80::2"), Interface: "eth0"}); !ok {
		t.Error("the zone did not become the interface")
	}
	if got := len(n.m.Sessions()); got != 2 {
		t.Errorf("%d sessions, want 2", got)
	}
}

// TestMultiHop: a multi-hop session (RFC 5883) comes up over packets that
// crossed routers as long as their TTL is at least its profile's
// MinimumTTL (254 by default); below it they are discarded. A single-hop
// session never accepts a packet that crossed a router, and the two kinds
// never take each other's packets (they use different ports).
func TestMultiHop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttl      int
		minTTL   uint8
		multiHop bool
		up       bool
	}{
		{"multi-hop, one router crossed", 254, 0, true, true},
		{"multi-hop, three routers crossed, minimum 250", 252, 250, true, true},
		{"multi-hop, below the default minimum", 253, 0, true, false},
		{"multi-hop, below a minimum of 255", 254, 255, true, false},
		{"single-hop, one router crossed", 254, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			l.net.ttl = tc.ttl
			a := l.node(1, 2, "198.51.100.1")
			b := l.node(2, 7, "198.51.100.2")
			prof := Profile{MinimumTTL: tc.minTTL}
			pa := Peer{Local: addrA4, Remote: addrB4, MultiHop: tc.multiHop, Profile: prof}
			pb := Peer{Local: addrB4, Remote: addrA4, MultiHop: tc.multiHop, Profile: prof}
			for _, p := range []struct {
				n *node
				p Peer
			}{{a, pa}, {b, pb}} {
				if err := p.n.m.AddSession(context.Background(), p.p); err != nil {
					t.Fatal(err)
				}
			}
			if tc.up {
				l.until("up on both sides", 5*time.Second, func() bool {
					sa, _ := a.m.Status(pa.Key())
					sb, _ := b.m.Status(pb.Key())
					return sa.State == Up && sb.State == Up
				})
				if got := len(a.connOf(t, Transport{Family: IPv4, MultiHop: tc.multiHop}).sentPackets(t)); got == 0 {
					t.Errorf("nothing sent on the %v transport", tc.multiHop)
				}
				return
			}
			l.advance(5 * time.Second)
			if st, _ := a.m.Status(pa.Key()); st.State == Up {
				t.Fatalf("session Up over packets with TTL %d", tc.ttl)
			}
			// Seen enough: both peers sent about once a second meanwhile.
			if got := gather(t, a)["steadylb_bfd_control_packets_discarded_total"][discardTTL]; got < 3 {
				t.Errorf("discarded{ttl} = %g after 5 s, want at least 3", got)
			}
		})
	}
}

// sequence is a rand.Source that replays values in its upper 32 bits,
// where rand.Rand.Uint32 takes them from.
type sequence []uint32

func (s *sequence) Uint64() uint64 {
	v := (*s)[0]
	*s = (*s)[1:]
	return uint64(v) << 32
}

// TestDiscriminators: local discriminators are nonzero and unique among
// the sessions (RFC 5880 6.8.1), drawn at random.
func TestDiscriminators(t *testing.T) {
	l := newLab(t)
	const jitter = 1 << 31 // the first session's first packet draws its jitter in between
	draws := sequence{0, 42, jitter, 0, 42, 7}
	for range 100 {
		draws = append(draws, jitter)
	}
	m := NewManager(testr.New(t), Options{Clock: l.clock, Listen: newFakeNet().host(1).Listen, Rand: &draws})
	var got []uint32
	for i := range 2 {
		k := Peer{Local: addrA4, Remote: netip.AddrFrom4([4]byte{198, 51, 100, byte(10 + i)})}
		if err := m.AddSession(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		st, _ := m.Status(k.Key())
		got = append(got, st.LocalDiscriminator)
	}
	if d := cmp.Diff([]uint32{42, 7}, got); d != "" {
		t.Errorf("discriminators (-want +got):\n%s", d)
	}
}
