package membership

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// memberlist declares a suspect member dead when its suspicion timer
// fires, even if the member's refutation is already in this node's socket
// or in memberlist's queue of received messages: a node starved of CPU
// reads both late, and the timer wins. It then reports the member gone
// and, a moment later, back. Acting on the first report costs what a real
// death costs: the declared-dead message silences the member, which
// starts its grace over, and its addresses move away and come back. In
// the lab's first failover at 508 addresses both survivors, starved by
// the takeover, declared each other dead this way within a second (each
// had refuted 70 to 200 ms before the other's timer fired), and half the
// addresses went unanswered for 3 s.
//
// So the view acts on a departure only once memberlist has handled every
// message that reached this node before it: it sends a check, a message
// to this node itself through memberlist, and when memberlist hands it
// back (Delegate.NotifyMsg), it has applied every alive message it had
// received over UDP before (gossip, probes, acks): it takes those first,
// whatever their order, each applied before the next is taken. (A
// push/pull over TCP, every 30 s or more, is merged on a goroutine of
// its own, in no order with the check.) A
// departure still pending then is real as far as this node can know, and
// the view records it (the declared-dead message, the live set). One that
// memberlist reported back alive meanwhile is dropped: the member is
// neither told nor taken over. A real departure waits for one loopback
// round trip more on a healthy node.

// A check that has not come back within checkRetry is sent again (memberlist
// drops a message when its queue is full), for as long as it takes: a node
// whose memberlist is that far behind has no reliable view, and a real
// departure is acted on by the members that are not. Only after
// checkGiveUp (memberlist's handler stuck, not slow) are the departures
// recorded unchecked, as they were before the check.
const (
	checkRetry  = 300 * time.Millisecond
	checkGiveUp = 5 * time.Second
)

// checkTag starts every check. It travels as a memberlist user message,
// which no one else sends.
var checkTag = []byte("steadylb/departure-check/1\x00")

// departure is a member memberlist reported gone, until a check confirms
// it.
type departure struct {
	node memberlist.Node // a copy: memberlist's may change after the call
	// after is the number of checks sent before it was reported: one
	// numbered higher was sent after, and confirms it.
	after uint64
}

// departures holds the members reported gone and not yet confirmed, and
// the checks' numbers.
type departures struct {
	nonce [16]byte
	// to is this node at its socket's own address, where checks go. Fixed
	// at New: memberlist's own node changes under its lock.
	to *memberlist.Node
	// ask wakes the checking goroutine (buffered 1: one wake for any
	// number of departures).
	ask chan struct{}

	mu      sync.Mutex
	pending map[string]departure
	issued  uint64 // checks numbered so far (1, 2, ...)
	sent    uint64 // the highest number sent (tests wait for it)
	back    uint64 // the highest number memberlist handed back
	// arrived is closed, and replaced, each time back grows.
	arrived chan struct{}
}

func newDepartures(self string, selfAddr string) (*departures, error) {
	ap, err := netip.ParseAddrPort(selfAddr)
	if err != nil {
		return nil, fmt.Errorf("the departure check's address %q: %w", selfAddr, err)
	}
	d := &departures{
		to:  &memberlist.Node{Name: self, Addr: ap.Addr().AsSlice(), Port: ap.Port()},
		ask: make(chan struct{}, 1), pending: map[string]departure{}, arrived: make(chan struct{}),
	}
	if _, err := rand.Read(d.nonce[:]); err != nil {
		return nil, fmt.Errorf("draw the departure check's nonce: %w", err)
	}
	return d, nil
}

// add notes that memberlist reported n gone. It only copies and signals,
// as memberlist's callbacks must.
func (d *departures) add(n *memberlist.Node) {
	c := *n
	c.Addr, c.Meta = slices.Clone(n.Addr), slices.Clone(n.Meta)
	d.mu.Lock()
	d.pending[n.Name] = departure{node: c, after: d.issued}
	d.mu.Unlock()
	select {
	case d.ask <- struct{}{}:
	default:
	}
}

// cancel drops a pending departure of the member memberlist reports
// alive again; it reports whether there was one.
func (d *departures) cancel(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.pending[name]
	delete(d.pending, name)
	return ok
}

// issue numbers a new check, to be sent at once.
func (d *departures) issue() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.issued++
	return d.issued
}

// confirm removes the departures that check back covers and calls record
// for each, under the lock that cancel takes: a member memberlist reports
// back alive is recorded alive after its departure, not before.
func (d *departures) confirm(back uint64, record func(*memberlist.Node)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, p := range d.pending {
		if p.after < back {
			delete(d.pending, name)
			record(&p.node)
		}
	}
}

// message is check seq as sent.
func (d *departures) message(seq uint64) []byte {
	msg := append(slices.Clone(checkTag), d.nonce[:]...)
	return binary.BigEndian.AppendUint64(msg, seq)
}

// received takes a user message memberlist hands over; it reports false
// for one that is not this node's check.
func (d *departures) received(msg []byte) bool {
	rest, ok := bytes.CutPrefix(msg, checkTag)
	if !ok || len(rest) != len(d.nonce)+8 || !bytes.Equal(rest[:len(d.nonce)], d.nonce[:]) {
		return false
	}
	seq := binary.BigEndian.Uint64(rest[len(d.nonce):])
	d.mu.Lock()
	defer d.mu.Unlock()
	if seq > d.back && seq <= d.issued {
		d.back = seq
		close(d.arrived)
		d.arrived = make(chan struct{})
	}
	return true
}

// waited is how a wait for a check ended.
type waited int

const (
	cameBack waited = iota
	retry
	gaveUp
	stopped
)

// wait waits for a check numbered least or more to come back, or for
// one of the others; it returns the highest number back.
func (d *departures) wait(least uint64, again, giveUp <-chan time.Time, stop <-chan struct{}) (uint64, waited) {
	for {
		d.mu.Lock()
		back, arrived := d.back, d.arrived
		d.mu.Unlock()
		if back >= least {
			return back, cameBack
		}
		select {
		case <-arrived:
		case <-again:
			return back, retry
		case <-giveUp:
			return back, gaveUp
		case <-stop:
			return back, stopped
		}
	}
}

// confirmDepartures records the departures memberlist reports, each once
// a check sent after it came back (see the top of this file). It runs
// from New until Leave or Shutdown.
func (m *Members) confirmDepartures() {
	d := m.view.departures
	for {
		select {
		case <-m.stopLoops:
			return
		case <-d.ask:
		}
		back, how := m.check(d)
		if how == stopped {
			return
		}
		if how == gaveUp {
			m.log.Error(nil, "no departure check came back through memberlist; acting on the departures as reported",
				"waited", checkGiveUp.String())
			back = math.MaxUint64 // every departure, unchecked
		}
		d.confirm(back, func(n *memberlist.Node) { m.view.recordGone(n, how == cameBack) })
	}
}

// check sends a check through memberlist to this node, and another each
// checkRetry, until one of them comes back, and returns the highest
// number back. A check that comes back while the transport dropped
// packets for memberlist (its queue full) may have overtaken a refutation
// that was dropped, which gossip sends again within a few rounds: then
// another check is sent checkRetry later, and that one must come back.
func (m *Members) check(d *departures) (uint64, waited) {
	giveUp := time.NewTimer(checkGiveUp)
	defer giveUp.Stop()
	dropped := m.transport.dropped.Load()
	first := m.sendCheck(d)
	for {
		again := time.NewTimer(checkRetry)
		back, how := d.wait(first, again.C, giveUp.C, m.stopLoops)
		switch {
		case how == retry:
			m.sendCheck(d)
			continue
		case how == cameBack && m.transport.dropped.Load() != dropped:
			dropped = m.transport.dropped.Load()
			// again has not fired: wait it out, then check anew.
			select {
			case <-again.C:
			case <-giveUp.C:
				return back, gaveUp
			case <-m.stopLoops:
				return back, stopped
			}
			first = m.sendCheck(d)
			continue
		}
		again.Stop()
		return back, how
	}
}

// sendCheck numbers a check and sends it; a send that fails is retried
// by the caller like a check that does not come back.
func (m *Members) sendCheck(d *departures) uint64 {
	seq := d.issue()
	if err := m.ml.SendBestEffort(d.to, d.message(seq)); err != nil {
		m.log.Info("could not send a departure check; sending another shortly", "error", err.Error())
		return seq
	}
	d.mu.Lock()
	d.sent = max(d.sent, seq)
	d.mu.Unlock()
	return seq
}
