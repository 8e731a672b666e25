package membership

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
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
// the takeover, declared each other dead this way within a second, each
// refutation having reached the declaring node before its timer fired,
// and half the addresses went unanswered for 3 s.
//
// So the view acts on a departure only once memberlist has handled every
// message that reached this node before it: departures sends a message
// to this node itself through memberlist, and when memberlist hands it
// back (Delegate.NotifyMsg), it has applied every alive message it had
// received before; it handles those first, whatever their order. A
// departure still pending then is real as far as this node can know, and
// the view records it (the declared-dead message, the live set). One that
// memberlist reported back alive meanwhile is dropped: the member is
// neither told nor taken over. A real departure waits for one loopback
// round trip more on a healthy node.

// confirmTimeout bounds the wait for the message to come back: past it
// (the message lost, memberlist's queue full) the departures pending
// when it was sent are recorded anyway, as they were before the check.
const confirmTimeout = 500 * time.Millisecond

// confirmTag starts every confirmation message. It travels as a
// memberlist user message, which no one else sends.
var confirmTag = []byte("steadylb/departure-check/1\x00")

// departure is a member memberlist reported gone, until confirmed.
type departure struct {
	node memberlist.Node // a copy: memberlist's may change after the call
	seq  uint64          // the first confirmation that may confirm it
}

// departures holds the members reported gone and not yet confirmed.
type departures struct {
	nonce [16]byte
	// ask wakes the confirming goroutine (buffered 1: one wake for any
	// number of departures).
	ask chan struct{}

	mu      sync.Mutex
	pending map[string]departure
	asked   uint64 // the highest confirmation number handed out
	sent    uint64 // the highest number sent
	back    uint64 // the highest number memberlist handed back
	// arrived is closed, and replaced, each time back grows.
	arrived chan struct{}
}

func newDepartures() (*departures, error) {
	d := &departures{ask: make(chan struct{}, 1), pending: map[string]departure{}, arrived: make(chan struct{})}
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
	d.asked++
	d.pending[n.Name] = departure{node: c, seq: d.asked}
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

// next returns the number of the confirmation to send now: it covers
// every departure added so far.
func (d *departures) next() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked
}

// confirm removes the departures that confirmation seq covers and calls
// record for each, under the lock that cancel takes: a member memberlist
// reports back alive is recorded alive after its departure, not before.
func (d *departures) confirm(seq uint64, record func(*memberlist.Node)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, p := range d.pending {
		if p.seq <= seq {
			delete(d.pending, name)
			record(&p.node)
		}
	}
}

// message is confirmation seq as sent.
func (d *departures) message(seq uint64) []byte {
	msg := append(slices.Clone(confirmTag), d.nonce[:]...)
	return binary.BigEndian.AppendUint64(msg, seq)
}

// received takes a user message memberlist hands over; it reports false
// for one that is not this node's confirmation.
func (d *departures) received(msg []byte) bool {
	rest, ok := bytes.CutPrefix(msg, confirmTag)
	if !ok || len(rest) != len(d.nonce)+8 || !bytes.Equal(rest[:len(d.nonce)], d.nonce[:]) {
		return false
	}
	seq := binary.BigEndian.Uint64(rest[len(d.nonce):])
	d.mu.Lock()
	defer d.mu.Unlock()
	if seq > d.back && seq <= d.asked {
		d.back = seq
		close(d.arrived)
		d.arrived = make(chan struct{})
	}
	return true
}

// wait returns once confirmation seq came back (true), or at timeout or
// stop (false).
func (d *departures) wait(seq uint64, timeout <-chan time.Time, stop <-chan struct{}) bool {
	for {
		d.mu.Lock()
		back, arrived := d.back, d.arrived
		d.mu.Unlock()
		if back >= seq {
			return true
		}
		select {
		case <-arrived:
		case <-timeout:
			return false
		case <-stop:
			return false
		}
	}
}

// confirmDepartures records the departures memberlist reports, each once
// a confirmation sent after it came back (see the top of this file). It
// runs from New until Leave or Shutdown.
func (m *Members) confirmDepartures() {
	d := m.view.departures
	for {
		select {
		case <-m.stopLoops:
			return
		case <-d.ask:
		}
		seq := d.next()
		confirmed := m.sendConfirmation(d, seq)
		if !confirmed {
			select {
			case <-m.stopLoops:
				return
			default:
			}
		}
		d.confirm(seq, func(n *memberlist.Node) { m.view.recordGone(n, confirmed) })
	}
}

// sendConfirmation sends confirmation seq to this node through memberlist
// and waits for it; it reports whether it came back.
func (m *Members) sendConfirmation(d *departures, seq uint64) bool {
	self := m.ml.LocalNode()
	if err := m.ml.SendBestEffort(self, d.message(seq)); err != nil {
		m.log.Info("could not check a departure against memberlist's pending messages; acting on it as reported", "error", err.Error())
		return false
	}
	d.mu.Lock()
	d.sent = max(d.sent, seq)
	d.mu.Unlock()
	timer := time.NewTimer(confirmTimeout)
	defer timer.Stop()
	if d.wait(seq, timer.C, m.stopLoops) {
		return true
	}
	if !m.closed.Load() {
		m.log.Info("a departure check did not come back through memberlist in time; acting on the departure as reported",
			"timeout", confirmTimeout.String())
	}
	return false
}
