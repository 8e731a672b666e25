package membership

import (
	"bytes"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

func TestKeyMeta(t *testing.T) {
	k := keyMeta{primary: keyPrint(keyA), accepted: []string{keyPrint(keyA), keyPrint(keyB)}}
	got, ok := parseKeyMeta(k.encode())
	if !ok || got.primary != k.primary || !slices.Equal(got.accepted, k.accepted) {
		t.Fatalf("parseKeyMeta(encode(%+v)) = %+v, %v", k, got, ok)
	}
	for _, bad := range []string{"", "steadylb-keys/1", "steadylb-keys/1 a", "steadylb-keys/2 a a", "steadylb-keys/1 a b", "x a a"} {
		if _, ok := parseKeyMeta([]byte(bad)); ok {
			t.Errorf("parseKeyMeta(%q) accepted", bad)
		}
	}
	if keyPrint(keyA) == keyPrint(keyB) || len(keyPrint(keyA)) != 16 {
		t.Errorf("fingerprints %s and %s", keyPrint(keyA), keyPrint(keyB))
	}
}

// FuzzParseKeyMeta: a peer's metadata never panics the parser, and what
// it accepts names its primary among the accepted keys.
func FuzzParseKeyMeta(f *testing.F) {
	f.Add(keyMeta{primary: "a", accepted: []string{"a", "b"}}.encode())
	f.Add([]byte("steadylb-keys/1 a a,"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, ok := parseKeyMeta(b); ok && !slices.Contains(k.accepted, k.primary) {
			t.Fatalf("accepted %q with primary %q not among %v", b, k.primary, k.accepted)
		}
	})
}

// TestKeyRotationKeepsTheClusterWhole changes the key of a running cluster
// of three the way the kubelet delivers it: to each member at another
// time, a second apart. No member may ever receive a message it cannot
// read (memberlist logs each one; a member that sent with a key others
// cannot read yet would soon be declared dead by them), no member may send
// with the new key before every one accepts it, and at the end each has
// the new key alone: a member with the old key cannot join, one with the
// new key can.
func TestKeyRotationKeepsTheClusterWhole(t *testing.T) {
	names := []string{"node-a", "node-b", "node-c"}
	var unreadable atomic.Int64
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, "could decrypt") {
			unreadable.Add(1)
		}
	}, funcr.Options{})
	ms := cluster(t, memberOpts{key: keyA, log: log}, names...)
	sentBefore := make([]uint64, len(ms))
	for i, m := range ms {
		sentBefore[i] = m.transport.sent.Load()
	}
	// The tick at which each member's volume shows the new key.
	const tick = 100 * time.Millisecond
	given := []int{0, 10, 20}
	done := make([]bool, len(ms))
	deadline := time.Now().Add(waitTimeout)
	for n := 0; !allTrue(done); n++ {
		if time.Now().After(deadline) {
			t.Fatalf("rotation not finished after %v: done %v", waitTimeout, done)
		}
		for i, m := range ms {
			if n < given[i] || done[i] {
				continue
			}
			var err error
			if done[i], err = m.UseSecretKey(keyB); err != nil {
				t.Errorf("%s: UseSecretKey: %v", m.name, err)
			}
		}
		for _, m := range ms {
			if n < given[len(ms)-1] && bytes.Equal(m.keyring.GetPrimaryKey(), keyB) {
				t.Fatalf("tick %d: %s sends with the new key before %s has it", n, m.name, ms[len(ms)-1].name)
			}
		}
		time.Sleep(tick) // the kubelet's pace, which the test imitates
	}
	if n := unreadable.Load(); n != 0 {
		t.Errorf("members received %d messages they could not decrypt during the rotation", n)
	}
	for i, m := range ms {
		waitLive(t, m, names)
		if keys := m.keyring.GetKeys(); len(keys) != 1 || !bytes.Equal(keys[0], keyB) {
			t.Errorf("%s holds %d keys after the rotation, want the new one alone", m.name, len(keys))
		}
		// Probes went on throughout: the cluster was talking, so a message
		// one member could not read would have been logged.
		if sent := m.transport.sent.Load() - sentBefore[i]; sent < 30 {
			t.Errorf("%s sent only %d packets during the rotation: too few to have seen a failure", m.name, sent)
		}
	}
	stale := newMember(t, "node-old", memberOpts{key: keyA})
	if _, err := stale.Join([]string{ms[0].addr}); err == nil {
		t.Errorf("a member with the old key joined")
	}
	fresh := newMember(t, "node-new", memberOpts{key: keyB})
	if _, err := fresh.Join([]string{ms[0].addr}); err != nil {
		t.Errorf("a member with the new key cannot join: %v", err)
	}
}

func allTrue(b []bool) bool { return !slices.Contains(b, false) }

func TestUseSecretKeyWithoutEncryption(t *testing.T) {
	m := newMember(t, "node-a", memberOpts{})
	if _, err := m.UseSecretKey(keyA); err != ErrNotEncrypted {
		t.Errorf("UseSecretKey on an unencrypted membership: %v, want ErrNotEncrypted", err)
	}
}
