package membership

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// The declared-dead message (fence.go) reaches this member as a packet on
// its memberlist socket, and the transport's one goroutine takes the
// packets in the order they arrived. A member whose reading is starved
// while its responders run is no stall (the process runs): in the lab, a
// restarted speaker that had just opened 1,000 addresses read the
// declaration 1.6 s after it came, and answered beside its replacement
// all along. What rules out the double answer is order: the others send
// the declaration before they answer in this member's place, so a request
// they answer reached this node after the declaration did. CaughtUp makes
// that order count: it puts a marker packet on this member's own socket,
// behind whatever waits there, and returns once the transport has taken
// it. Every packet that arrived before has then been handled, and a
// declaration among them has fenced the announcer (the transport calls
// the fence as it takes the packet).
//
// One marker serves every caller that asked before it was sent, and
// markers go out at most every markerSpacing: memberlist's transport
// allocates a 64 KiB buffer for each packet it reads, and a flood of
// requests must not become a flood of markers. A marker carries a nonce
// drawn when the member starts and a sequence number: only this member's
// own markers count, and a number not sent yet counts for nothing.

// markerTag starts every marker. Its first byte, 's', is no memberlist
// message type, encryption version or label marker (as declaredDeadTag).
var markerTag = []byte("steadylb/inbox-marker/1\x00")

// markerSpacing is the least time between two markers: what a flood of
// requests adds to each answer, at most.
const markerSpacing = 5 * time.Millisecond

// inbox sends markers to this member's own socket and follows which the
// transport has taken.
type inbox struct {
	nonce [16]byte
	// send writes a marker on the memberlist socket to its own address.
	send func([]byte) error
	// failed reports a marker that could not be sent, once until one is
	// sent again.
	failed func(error)

	mu     sync.Mutex
	sent   uint64    // markers sent (the last one's number)
	sentAt time.Time // when the last was sent
	taken  uint64    // the highest number the transport took
	// advanced is closed, and replaced, each time taken grows.
	advanced chan struct{}
	// due is the timer of the next marker when spacing held it back.
	due    *time.Timer
	broken bool // the last send failed
}

func newInbox(send func([]byte) error, failed func(error)) (*inbox, error) {
	b := &inbox{send: send, failed: failed, advanced: make(chan struct{})}
	if _, err := rand.Read(b.nonce[:]); err != nil {
		return nil, fmt.Errorf("draw the inbox marker's nonce: %w", err)
	}
	return b, nil
}

// caughtUp reports whether the transport took, within timeout, a marker
// sent at or after the call began: every packet that arrived before it
// has been handled then.
func (b *inbox) caughtUp(timeout time.Duration) bool {
	began := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	want := b.markerAfter(began)
	for b.taken < want {
		advanced := b.advanced
		b.mu.Unlock()
		select {
		case <-advanced:
		case <-deadline.C:
			b.mu.Lock()
			return false
		}
		b.mu.Lock()
	}
	return true
}

// markerAfter returns the number of a marker sent at or after since: the
// last one, the one spacing holds back, or one sent now. Called with mu
// held.
func (b *inbox) markerAfter(since time.Time) uint64 {
	switch {
	case b.sent > 0 && !b.sentAt.Before(since):
		return b.sent
	case b.due != nil:
		return b.sent + 1
	}
	if wait := markerSpacing - time.Since(b.sentAt); b.sent > 0 && wait > 0 {
		b.due = time.AfterFunc(wait, b.sendDue)
		return b.sent + 1
	}
	b.sendLocked()
	return b.sent
}

func (b *inbox) sendDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.due == nil { // stopped
		return
	}
	b.due = nil
	b.sendLocked()
}

// sendLocked sends the next marker. A marker that cannot be sent proves
// nothing about the reading: it counts as taken, so that no caller waits
// for it and a member whose socket cannot reach itself still answers, and
// the failure is reported. Called with mu held.
func (b *inbox) sendLocked() {
	b.sent++
	b.sentAt = time.Now()
	m := make([]byte, 0, len(markerTag)+len(b.nonce)+8)
	m = binary.BigEndian.AppendUint64(append(append(m, markerTag...), b.nonce[:]...), b.sent)
	err := b.send(m)
	if err != nil {
		b.advance(b.sent)
	}
	if (err != nil) != b.broken {
		b.broken = err != nil
		if err != nil && b.failed != nil {
			b.failed(err)
		}
	}
}

// take records a marker the transport took from the socket. It reports
// whether packet was a marker at all, this member's or not: none is for
// memberlist.
func (b *inbox) take(packet []byte) bool {
	rest, ok := bytes.CutPrefix(packet, markerTag)
	if !ok {
		return false
	}
	if len(rest) != len(b.nonce)+8 || !bytes.Equal(rest[:len(b.nonce)], b.nonce[:]) {
		return true
	}
	n := binary.BigEndian.Uint64(rest[len(b.nonce):])
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= b.sent {
		b.advance(n)
	}
	return true
}

// advance records that the markers up to n were taken. Called with mu
// held.
func (b *inbox) advance(n uint64) {
	if n <= b.taken {
		return
	}
	b.taken = n
	close(b.advanced)
	b.advanced = make(chan struct{})
}

// stop ends a marker held back by spacing; waiting callers time out.
func (b *inbox) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.due != nil {
		b.due.Stop()
		b.due = nil
	}
}

// selfAddr is where this member's markers go: the address its memberlist
// socket is bound to, or the loopback address of its family when bound to
// every address.
func selfAddr(bindAddr string, port int) (string, error) {
	ip, err := netip.ParseAddr(bindAddr)
	if err != nil {
		return "", fmt.Errorf("memberlist bind address %q: %w", bindAddr, err)
	}
	switch {
	case ip.IsUnspecified() && ip.Is4():
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case ip.IsUnspecified():
		ip = netip.IPv6Loopback()
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port)), nil
}
