package membership

import (
	"log"
	"net"
	"sync/atomic"
	"testing"
)

// TestFenceDoesNotWaitForMemberlist: a declared-dead packet reaches the
// fence while memberlist's handler reads nothing (stuck, as one whose log
// pipe is full is) and a flood of its packets waits: they queue, then are
// dropped and counted, and the fence goes past them.
func TestFenceDoesNotWaitForMemberlist(t *testing.T) {
	var fenced atomic.Int32
	tr, err := newTransport("127.0.0.1", freePort(t), log.New(discardWriter{}, "", 0), func([]byte, net.Addr) {
		fenced.Add(1)
	}, nil)
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
