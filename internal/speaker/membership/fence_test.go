package membership

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

func TestParseDeclaredDead(t *testing.T) {
	for _, tc := range []struct {
		name              string
		msg               string
		node, from, token string
		ok                bool
	}{
		{"encoded", string(encodeDeclaredDead("node-a", "node-b", "t0")), "node-a", "node-b", "t0", true},
		{"written out", "node-a\x00node-b\x00t0", "node-a", "node-b", "t0", true},
		{"no token", "node-a\x00node-b\x00", "", "", "", false},
		{"an older version's", "node-a\x00node-b", "", "", "", false},
		{"no sender", "node-a\x00\x00t0", "", "", "", false},
		{"no member", "\x00node-b\x00t0", "", "", "", false},
		{"extra field", "node-a\x00node-b\x00t0\x00x", "", "", "", false},
		{"empty", "", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, from, token, ok := parseDeclaredDead([]byte(tc.msg))
			if node != tc.node || from != tc.from || token != tc.token || ok != tc.ok {
				t.Errorf("parseDeclaredDead(%q) = %q, %q, %q, %v; want %q, %q, %q, %v",
					tc.msg, node, from, token, ok, tc.node, tc.from, tc.token, tc.ok)
			}
		})
	}
}

// FuzzParseDeclaredDead: the message comes from the network; parsing never
// panics, and what it accepts encodes back to the same bytes.
func FuzzParseDeclaredDead(f *testing.F) {
	f.Add(encodeDeclaredDead("node-a", "node-b", "0123456789abcdef"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		node, from, token, ok := parseDeclaredDead(msg)
		if !ok {
			return
		}
		if again := encodeDeclaredDead(node, from, token); !bytes.Equal(again, msg) {
			t.Fatalf("parseDeclaredDead(%q) = %q, %q, %q, which encodes to %q", msg, node, from, token, again)
		}
	})
}

var (
	keyA = bytes.Repeat([]byte{1}, 32)
	keyB = bytes.Repeat([]byte{2}, 32)
)

func TestSealOpenFence(t *testing.T) {
	payload := encodeDeclaredDead("node-a", "node-b", "t0")
	seal := func(key []byte) []byte {
		p, err := sealFence(payload, key)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		packet []byte
		keys   [][]byte
		ok     bool
	}{
		{"plain, no key", seal(nil), nil, true},
		{"sealed, the key", seal(keyA), [][]byte{keyA}, true},
		{"sealed, one of the keyring's keys", seal(keyB), [][]byte{keyA, keyB}, true},
		{"plain, but the cluster has a key", seal(nil), [][]byte{keyA}, false},
		{"sealed with another key", seal(keyB), [][]byte{keyA}, false},
		{"sealed, but this member has no key", seal(keyA), nil, false},
		{"sealed, one byte changed", flip(seal(keyA), len(declaredDeadTag)+20), [][]byte{keyA}, false},
		{"sealed, flag changed to plain", flip(seal(keyA), len(declaredDeadTag)), [][]byte{keyA}, false},
		{"tag only", declaredDeadTag, nil, false},
		{"truncated seal", seal(keyA)[:len(declaredDeadTag)+5], [][]byte{keyA}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !isFence(tc.packet) {
				t.Fatalf("isFence(%q) = false", tc.packet)
			}
			got, err := openFence(tc.packet, tc.keys)
			if (err == nil) != tc.ok {
				t.Fatalf("openFence: %v, want ok %v", err, tc.ok)
			}
			if tc.ok && !bytes.Equal(got, payload) {
				t.Errorf("openFence = %q, want %q", got, payload)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 1
	return b
}

// FuzzOpenFence: whatever arrives on the memberlist port after the tag,
// opening it never panics, and with a key only what was sealed with it
// opens.
func FuzzOpenFence(f *testing.F) {
	sealed, _ := sealFence(encodeDeclaredDead("a", "b", "t"), keyA)
	f.Add(sealed[len(declaredDeadTag):])
	f.Add([]byte{fencePlain, 'a', 0, 'b', 0, 't'})
	f.Add([]byte{fenceSealed})
	f.Fuzz(func(t *testing.T, rest []byte) {
		packet := append(bytes.Clone(declaredDeadTag), rest...)
		_, _ = openFence(packet, nil)
		if got, err := openFence(packet, [][]byte{keyA}); err == nil && !bytes.Equal(rest, sealed[len(declaredDeadTag):]) {
			t.Fatalf("a packet not sealed by us opened with the key: %q", got)
		}
	})
}

// TestDeclaredDeadIsTold: a member declared dead that comes back alive
// in the same life (frozen, or cut off, for longer than the detection
// time) is told by the others that they declared it dead. The member that
// comes back is a new Members on the old one's port, holding the old
// one's token: what the others see of a process that stopped running and
// runs again.
func TestDeclaredDeadIsTold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   []byte
		nodes []string
	}{
		{"no key", nil, []string{"node-a", "node-b", "node-c"}},
		{"key", keyA, []string{"node-a", "node-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := cluster(t, memberOpts{key: tc.key}, tc.nodes...)
			old := ms[len(ms)-1]
			token := old.fence.currentToken()
			if err := old.Shutdown(); err != nil {
				t.Fatal(err)
			}
			for _, m := range ms[:len(ms)-1] {
				waitLive(t, m, tc.nodes[:len(ms)-1])
			}
			back := newMember(t, old.name, memberOpts{port: old.port, key: tc.key})
			back.fence.mu.Lock()
			back.fence.token = token
			back.fence.mu.Unlock()
			if _, err := back.Join([]string{ms[0].addr}); err != nil {
				t.Fatalf("rejoin: %v", err)
			}
			select {
			case <-back.DeclaredDead():
			case <-time.After(waitTimeout):
				t.Fatalf("%s was not told it had been declared dead within %v", old.name, waitTimeout)
			}
		})
	}
}

// TestRestartedMemberIsNotToldItsPreviousLife: a member that restarted
// (a new process, so a new token) is told too when it is back, and the
// message, about its previous process, does nothing. The test sees the
// message arrive (counted stale) before it checks that nothing happened.
func TestRestartedMemberIsNotToldItsPreviousLife(t *testing.T) {
	ms := cluster(t, memberOpts{}, "node-a", "node-b")
	old := ms[1]
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitLive(t, ms[0], []string{"node-a"})
	reg := prometheus.NewRegistry()
	back := newMember(t, "node-b", memberOpts{port: old.port, reg: reg})
	if _, err := back.Join([]string{ms[0].addr}); err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	waitFor(t, "the message about the previous process to arrive", func() bool {
		return declaredCount(t, reg, "stale") >= 1
	})
	select {
	case <-back.DeclaredDead():
		t.Fatal("a restarted member acted on a message about its previous process")
	default:
	}
	if got := declaredCount(t, reg, "accepted"); got != 0 {
		t.Errorf("accepted %v messages, want 0", got)
	}
}

// knownToken is the fence token of member as m's view has it.
func knownToken(m *Members, member string) string {
	m.view.mu.Lock()
	defer m.view.mu.Unlock()
	return tokenOf(m.view.members[member].meta)
}

// forge sends packet to member from a socket of its own: another port
// than any member's, as an outsider on the network would.
func forge(t *testing.T, to *testMember, packet []byte) {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dst, err := net.ResolveUDPAddr("udp", to.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.WriteTo(packet, dst); err != nil {
		t.Fatal(err)
	}
}

func declaredCount(t *testing.T, reg prometheus.Gatherer, result string) float64 {
	t.Helper()
	return gauge(t, reg, "steadylb_memberlist_declared_dead_messages_total", "result", result)
}

// TestForgedDeclaredDeadIsIgnored: a "declared dead" message from a socket
// that is no member's does nothing, whoever it claims to come from, even
// naming the right token; with a key, only a message sealed with it
// counts. Each forged packet is seen to arrive (the refused count), and a
// real one from a member afterwards is acted on, so silence is not just
// lost packets.
func TestForgedDeclaredDeadIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    []byte
		forged func(token string) [][]byte
		// sealedByOutsider: a message sealed with the cluster key counts
		// from anywhere, since only a holder of the key can make it.
		sealedByOutsider bool
	}{
		{name: "no key", forged: func(token string) [][]byte {
			return [][]byte{
				mustSeal(t, encodeDeclaredDead("node-a", "node-b", token), nil),  // claims a member, wrong source
				mustSeal(t, encodeDeclaredDead("node-a", "mallory", token), nil), // no member
				mustSeal(t, encodeDeclaredDead("node-a", "node-a", token), nil),  // itself
			}
		}},
		{name: "key", key: keyA, sealedByOutsider: true, forged: func(token string) [][]byte {
			return [][]byte{
				mustSeal(t, encodeDeclaredDead("node-a", "node-b", token), nil),  // not sealed
				mustSeal(t, encodeDeclaredDead("node-a", "node-b", token), keyB), // another key
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			ms := cluster(t, memberOpts{key: tc.key, reg: reg}, "node-a", "node-b")
			a, b := ms[0], ms[1]
			token := a.fence.currentToken()
			forged := tc.forged(token)
			for _, p := range forged {
				forge(t, a, p)
			}
			waitGauge(t, reg, "steadylb_memberlist_declared_dead_messages_total", "result", "refused", float64(len(forged)))
			select {
			case <-a.DeclaredDead():
				t.Fatal("a forged message made node-a believe it was declared dead")
			default:
			}
			if tc.sealedByOutsider {
				forge(t, a, mustSeal(t, encodeDeclaredDead("node-a", "node-b", token), tc.key))
			} else {
				b.tellDeclaredDead("node-a", a.self, knownToken(b.Members, "node-a"))
			}
			select {
			case <-a.DeclaredDead():
			case <-time.After(waitTimeout):
				t.Fatalf("a genuine message was not acted on within %v", waitTimeout)
			}
			if got := declaredCount(t, reg, "accepted"); got != 1 {
				t.Errorf("accepted %v messages, want 1", got)
			}
		})
	}
}

func mustSeal(t *testing.T, payload, key []byte) []byte {
	t.Helper()
	p, err := sealFence(payload, key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEveryDeclarationIsActedOn: a member declared dead again and again
// in a few seconds (as one starved of CPU is) acts on every declaration,
// and on only one copy of each however many arrive (each sender tells it
// at once and again when it is back; a replay repeats them). Between
// declarations the test waits until the sender's view has the member's
// new token, which checks that it is published. The rate limit this
// replaced acted on three, then one per 10 s. OnDeclaredDead is called
// once per declaration too, before the channel signals.
func TestEveryDeclarationIsActedOn(t *testing.T) {
	reg := prometheus.NewRegistry()
	var hooked atomic.Int32
	ms := cluster(t, memberOpts{reg: reg, onDead: func() { hooked.Add(1) }}, "node-a", "node-b")
	a, b := ms[0], ms[1]
	const declarations, copies = 5, 20
	var last string
	for i := range declarations {
		var token string
		waitFor(t, "node-b to learn node-a's next fence token", func() bool {
			token = knownToken(b.Members, "node-a")
			return token != "" && token != last
		})
		last = token
		for range copies {
			b.tellDeclaredDead("node-a", a.self, token)
		}
		select {
		case <-a.DeclaredDead():
		case <-time.After(waitTimeout):
			t.Fatalf("declaration %d was not acted on within %v", i+1, waitTimeout)
		}
		if got := hooked.Load(); got != int32(i+1) {
			t.Fatalf("OnDeclaredDead called %d times by declaration %d's signal", got, i+1)
		}
		waitFor(t, "every copy to arrive", func() bool {
			return declaredCount(t, reg, "accepted")+declaredCount(t, reg, "stale") == float64((i+1)*copies)
		})
	}
	if got := declaredCount(t, reg, "accepted"); got != declarations {
		t.Errorf("acted on %v declarations, want %d", got, declarations)
	}
	if got := declaredCount(t, reg, "refused"); got != 0 {
		t.Errorf("refused %v messages from a member, want 0", got)
	}
}

// TestDeclaredDeadBeforeTheSendersJoin: a joining member can be told it
// was declared dead before its own view knows the sender (the member it
// joined sees it alive first, and tells it at once). The message is held
// and acted on when the sender joins; one from a sender that never joins,
// or that joins too late, is not.
func TestDeclaredDeadBeforeTheSendersJoin(t *testing.T) {
	keyring, err := memberlist.NewKeyring(nil, keyA)
	if err != nil {
		t.Fatal(err)
	}
	packet := func(from, token string) []byte {
		p, err := sealFence(encodeDeclaredDead("node-b", from, token), keyA)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	src := &net.UDPAddr{IP: net.IPv4(198, 51, 100, 1), Port: 7946}
	for _, tc := range []struct {
		name     string
		from     string
		joins    string
		late     bool
		declared bool
	}{
		{name: "sender joins after", from: "node-a", joins: "node-a", declared: true},
		{name: "another member joins", from: "node-a", joins: "node-c"},
		{name: "sender joins too late", from: "node-a", joins: "node-a", late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(logr.Discard(), time.Now)
			f := newFence(logr.Discard(), "node-b", keyring, v)
			v.joined = f.joined
			f.receive(packet(tc.from, f.currentToken()), src)
			if f.refused.Load() != 1 {
				t.Fatalf("refused %d messages before the sender joined, want 1", f.refused.Load())
			}
			if tc.late {
				f.mu.Lock()
				h := f.held[tc.from]
				h.at = h.at.Add(-2 * holdFor)
				f.held[tc.from] = h
				f.mu.Unlock()
			}
			v.NotifyJoin(&memberlist.Node{Name: tc.joins, Addr: src.IP, Port: uint16(src.Port)})
			select {
			case <-f.declared:
				if !tc.declared {
					t.Fatal("acted on the held message")
				}
				if f.accepted.Load() != 1 {
					t.Errorf("accepted %d, want 1", f.accepted.Load())
				}
			default:
				if tc.declared {
					t.Fatal("the held message was not acted on when its sender joined")
				}
			}
		})
	}
}

// TestSuspicionIsSignalled: a member that refutes a suspicion of itself
// calls OnSuspected. Without a key memberlist takes anyone's gossip, so
// the test sends a "suspect" message about node-a as a peer would, in
// memberlist's own encoding (its message type 3, msgpack); the call
// proves that memberlist still logs the refutation refutingSuspect names.
func TestSuspicionIsSignalled(t *testing.T) {
	var suspected atomic.Int32
	ms := cluster(t, memberOpts{onSuspected: func() { suspected.Add(1) }}, "node-a", "node-b")
	a := ms[0]
	const suspectMsg = 3
	var buf bytes.Buffer
	buf.WriteByte(suspectMsg)
	msg := struct {
		Incarnation uint32
		Node, From  string
	}{Incarnation: 1 << 20, Node: "node-a", From: "node-b"}
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(msg); err != nil {
		t.Fatal(err)
	}
	if suspected.Load() != 0 {
		t.Fatalf("OnSuspected called %d times before any suspicion", suspected.Load())
	}
	forge(t, a, buf.Bytes())
	waitFor(t, "node-a to signal the suspicion", func() bool { return suspected.Load() == 1 })
}

// TestPreviousTokenAfterTheCopies: a message naming the token this member
// just replaced is a copy of the declaration it acted on while the copies
// can still come, and a new declaration by a member that has not heard
// the new token after that: acted on once, and never again.
func TestPreviousTokenAfterTheCopies(t *testing.T) {
	keyring, err := memberlist.NewKeyring(nil, keyA)
	if err != nil {
		t.Fatal(err)
	}
	v := newView(logr.Discard(), time.Now)
	f := newFence(logr.Discard(), "node-b", keyring, v)
	src := &net.UDPAddr{IP: net.IPv4(198, 51, 100, 1), Port: 7946}
	v.NotifyJoin(&memberlist.Node{Name: "node-a", Addr: src.IP, Port: uint16(src.Port)})
	first := f.currentToken()
	tell := func() { f.receive(mustSeal(t, encodeDeclaredDead("node-b", "node-a", first), keyA), src) }
	steps := []struct {
		name            string
		later           time.Duration // moves the last rotation back by this
		accepted, stale uint64
	}{
		{"the declaration", 0, 1, 0},
		{"its copy, at once", 0, 1, 1},
		{"its copy, within the window", copiesWindow / 2, 1, 2},
		{"a declaration naming the old token after the window", copiesWindow, 2, 2},
		{"that token again, now two back", 10 * copiesWindow, 2, 3},
	}
	for _, st := range steps {
		f.mu.Lock()
		f.rotatedAt = f.rotatedAt.Add(-st.later)
		f.mu.Unlock()
		tell()
		if f.accepted.Load() != st.accepted || f.stale.Load() != st.stale {
			t.Fatalf("%s: accepted %d, stale %d; want %d, %d", st.name, f.accepted.Load(), f.stale.Load(), st.accepted, st.stale)
		}
	}
}
