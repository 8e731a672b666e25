package membership

import (
	"bytes"
	"testing"
	"time"
)

func TestParseDeclaredDead(t *testing.T) {
	tag := string(declaredDeadTag)
	for _, tc := range []struct {
		name       string
		msg        string
		node, from string
		ok         bool
	}{
		{"encoded", string(encodeDeclaredDead("node-a", "node-b")), "node-a", "node-b", true},
		{"written out", tag + "node-a\x00node-b", "node-a", "node-b", true},
		{"no tag", "node-a\x00node-b", "", "", false},
		{"other version", "steadylb/declared-dead/2\x00node-a\x00node-b", "", "", false},
		{"no sender", tag + "node-a\x00", "", "", false},
		{"no member", tag + "\x00node-b", "", "", false},
		{"no separator", tag + "node-a", "", "", false},
		{"extra field", tag + "node-a\x00node-b\x00node-c", "", "", false},
		{"empty", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, from, ok := parseDeclaredDead([]byte(tc.msg))
			if node != tc.node || from != tc.from || ok != tc.ok {
				t.Errorf("parseDeclaredDead(%q) = %q, %q, %v; want %q, %q, %v", tc.msg, node, from, ok, tc.node, tc.from, tc.ok)
			}
		})
	}
}

// FuzzParseDeclaredDead: the message comes from the network; parsing never
// panics, and what it accepts encodes back to the same bytes.
func FuzzParseDeclaredDead(f *testing.F) {
	f.Add(encodeDeclaredDead("node-a", "node-b"))
	f.Add(declaredDeadTag)
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		node, from, ok := parseDeclaredDead(msg)
		if !ok {
			return
		}
		if again := encodeDeclaredDead(node, from); !bytes.Equal(again, msg) {
			t.Fatalf("parseDeclaredDead(%q) = %q, %q, which encodes to %q", msg, node, from, again)
		}
	})
}

// TestDeclaredDeadIsTold: a member declared dead that comes back alive
// (as one frozen or cut off for longer than the detection time does) is
// told by the others that they declared it dead.
func TestDeclaredDeadIsTold(t *testing.T) {
	ms := cluster(t, memberOpts{}, "node-a", "node-b", "node-c")
	old := ms[2]
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitLive(t, ms[0], []string{"node-a", "node-b"})
	waitLive(t, ms[1], []string{"node-a", "node-b"})
	back := newMember(t, "node-c", memberOpts{port: old.port})
	if _, err := back.Join([]string{ms[0].addr}); err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	select {
	case <-back.DeclaredDead():
	case <-time.After(waitTimeout):
		t.Fatalf("node-c was not told it had been declared dead within %v", waitTimeout)
	}
}
