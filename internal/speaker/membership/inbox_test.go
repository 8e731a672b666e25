package membership

import (
	"bytes"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blockedTransport is a transport whose reading goroutine is stuck in the
// fence for the first declared-dead packet until release is called (or
// the test ends), as a starved one would be: what comes after waits in
// the socket.
func blockedTransport(t *testing.T) (tr *transport, dst string, fenced *atomic.Int32, release func()) {
	t.Helper()
	fenced = new(atomic.Int32)
	blocked := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(blocked) }) }
	tr, err := newTransport("127.0.0.1", freePort(t), log.New(discardWriter{}, "", 0), func([]byte, net.Addr) {
		if fenced.Add(1) == 1 {
			<-blocked
		}
	}, func(err error) { t.Errorf("marker not sent: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown() })
	t.Cleanup(release) // first: Shutdown waits for the reading
	dst = net.JoinHostPort("127.0.0.1", itoa(tr.GetAutoBindPort()))
	send(t, dst, append(declaredDeadTag, fencePlain))
	waitFor(t, "the reading to block in the fence", func() bool { return fenced.Load() == 1 })
	return tr, dst, fenced, release
}

// TestCaughtUpComesAfterWhatArrivedBefore: a declared-dead packet that
// arrived before the call, while the reading was blocked, is handled
// before CaughtUp reports true; until then it reports nothing, and a
// timeout reports false.
func TestCaughtUpComesAfterWhatArrivedBefore(t *testing.T) {
	tr, dst, fenced, release := blockedTransport(t)
	send(t, dst, append(declaredDeadTag, fencePlain)) // the declaration, behind the blocked one

	if tr.inbox.caughtUp(50 * time.Millisecond) {
		t.Fatal("caught up while the reading is blocked")
	}
	var atReturn atomic.Int32
	done := make(chan bool)
	go func() {
		ok := tr.inbox.caughtUp(10 * time.Second)
		atReturn.Store(fenced.Load())
		done <- ok
	}()
	// Released only once the call's marker is out: a call that returned
	// at once would have seen one fence, not two.
	// The first call's marker is the first; the second call's, the second.
	waitFor(t, "a marker sent after the call began", func() bool {
		tr.inbox.mu.Lock()
		defer tr.inbox.mu.Unlock()
		return tr.inbox.sent >= 2
	})
	select {
	case <-done:
		t.Fatal("returned before the blocked reading went on")
	default:
	}
	release()
	if !<-done {
		t.Fatal("not caught up once the reading went on")
	}
	if n := atReturn.Load(); n != 2 {
		t.Errorf("%d declared-dead packets handled when CaughtUp returned, want 2 (the one queued before)", n)
	}
	if n := len(tr.PacketCh()); n != 0 {
		t.Errorf("%d packets handed to memberlist, want none: markers are not its", n)
	}
}

// TestMarkersAreSpaced: callers that ask at once share markers, and no
// more than one goes out per markerSpacing however many ask.
func TestMarkersAreSpaced(t *testing.T) {
	tr, err := newTransport("127.0.0.1", freePort(t), log.New(discardWriter{}, "", 0), func([]byte, net.Addr) {},
		func(err error) { t.Errorf("marker not sent: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown() })
	const callers = 200
	began := time.Now()
	var wg sync.WaitGroup
	var late atomic.Int32
	for range callers {
		wg.Go(func() {
			if !tr.inbox.caughtUp(10 * time.Second) {
				late.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	if late.Load() > 0 {
		t.Fatalf("%d of %d calls timed out", late.Load(), callers)
	}
	tr.inbox.mu.Lock()
	sent := tr.inbox.sent
	tr.inbox.mu.Unlock()
	if most := uint64(took/markerSpacing) + 2; sent < 1 || sent > most {
		t.Errorf("%d markers for %d calls in %v, want 1 to %d (one per %v)", sent, callers, took, most, markerSpacing)
	}
}

// TestForeignMarkersCountForNothing: a marker with another nonce, or with
// a number this member has not sent, moves nothing, and reaches
// memberlist no more than this member's own.
func TestForeignMarkersCountForNothing(t *testing.T) {
	tr, _, _, _ := blockedTransport(t)
	own := func(n byte) []byte {
		m := append(append(bytes.Clone(markerTag), tr.inbox.nonce[:]...), 0, 0, 0, 0, 0, 0, 0, n)
		return m
	}
	foreign := append(append(bytes.Clone(markerTag), make([]byte, 16)...), 0, 0, 0, 0, 0, 0, 0, 1)
	for _, tt := range []struct {
		name   string
		packet []byte
	}{
		{"another nonce", foreign},
		{"a number not sent", own(9)},
		{"too short", markerTag},
	} {
		if !tr.inbox.take(tt.packet) {
			t.Errorf("%s: not taken out of memberlist's packets", tt.name)
		}
		tr.inbox.mu.Lock()
		taken := tr.inbox.taken
		tr.inbox.mu.Unlock()
		if taken != 0 {
			t.Errorf("%s: taken = %d, want 0", tt.name, taken)
		}
	}
	if tr.inbox.take([]byte{4, 0, 0, 0}) {
		t.Error("memberlist's packet taken as a marker")
	}
}

func TestSelfAddr(t *testing.T) {
	for _, tt := range []struct{ bind, want string }{
		{"0.0.0.0", "127.0.0.1:7946"},
		{"::", "[::1]:7946"},
		{"198.51.100.1", "198.51.100.1:7946"},
		{"2001:db8::1", "[2001:db8::1]:7946"},
	} {
		got, err := selfAddr(tt.bind, 7946)
		if err != nil || got != tt.want {
			t.Errorf("selfAddr(%q) = %q, %v; want %q", tt.bind, got, err, tt.want)
		}
	}
	if _, err := selfAddr("node-1", 7946); err == nil {
		t.Error("selfAddr of a name: no error")
	}
}
