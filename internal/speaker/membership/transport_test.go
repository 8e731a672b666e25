package membership

import (
	"log"
	"net"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/memberlist"
)

// TestFenceDoesNotWaitForMemberlist: a declared-dead packet reaches the
// fence while memberlist's handler reads nothing (stuck, as one whose log
// pipe is full is) and a flood of its packets waits: they queue, then are
// dropped and counted, and the fence goes past them.
func TestFenceDoesNotWaitForMemberlist(t *testing.T) {
	var fenced atomic.Int32
	tr, err := newTransport("127.0.0.1", freePort(t), log.New(discardWriter{}, "", 0), func([]byte, net.Addr) {
		fenced.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown() })
	dst := net.JoinHostPort("127.0.0.1", itoa(tr.GetAutoBindPort()))
	const flood = packetQueue + 100
	for range flood {
		send(t, dst, []byte{4, 0, 0, 0}) // an alive message's type byte: memberlist's
	}
	waitFor(t, "memberlist's queue to fill and the rest to be dropped", func() bool {
		return len(tr.PacketCh()) == packetQueue && tr.dropped.Load() > 0
	})
	send(t, dst, append(declaredDeadTag, fencePlain))
	waitFor(t, "the declared-dead packet to reach the fence", func() bool { return fenced.Load() == 1 })
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func send(t *testing.T, dst string, b []byte) {
	t.Helper()
	conn, err := net.Dial("udp", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestHearsOthers: a member that knows another one alive and takes no
// packet for SilenceLimit says it does not hear the others, and any
// packet ends that; with no other member alive it hears them by
// definition (a member alone has no one to be declared dead by).
func TestHearsOthers(t *testing.T) {
	m := newMember(t, "a", memberOpts{})
	if !m.HearsOthers() {
		t.Fatal("a member alone says it does not hear the others")
	}
	// Alive in the view only: memberlist does not know it, so neither it
	// nor memberlist sends this member anything.
	other := &memberlist.Node{Name: "b", Addr: net.ParseIP("127.0.0.1"), Port: 9}
	m.view.record(other, true)
	waitFor(t, "the member to say it hears no one", func() bool { return !m.HearsOthers() })
	send(t, m.addr, []byte{4, 0, 0, 0})
	waitFor(t, "a packet to end the silence", m.HearsOthers)
	waitFor(t, "the silence to come back", func() bool { return !m.HearsOthers() })
	m.view.record(other, false)
	if !m.HearsOthers() {
		t.Error("with the other member gone, the member says it does not hear the others")
	}
}
