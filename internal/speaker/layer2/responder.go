package layer2

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"k8s.io/utils/clock"
)

// Announcement schedule. A new owner announces at once, then
// announceRepeats more times announceSpacing apart: at 0, 250, 500 and
// 750 ms. One frame is usually enough; the repeats cover a frame lost while
// the segment is still settling after the failure that caused the takeover
// (a bond failing over, a switch port relearning, a queue dropping a
// burst), which lasts from tens to a few hundred milliseconds, so repeats
// closer together would be lost with the first. Wider spacing would miss
// the budget: the last repeat still lands within the one-second failover
// target.
const (
	announceRepeats = 3
	announceSpacing = 250 * time.Millisecond
)

const (
	// maxFrameLen holds any ARP or neighbor solicitation frame; longer
	// ones are truncated by the kernel and then fail to parse, as they
	// should.
	maxFrameLen = 2048
	// readRetryDelay paces a reader whose socket keeps failing (for
	// instance while its interface is deleted and before the next rescan
	// closes it), so it does not spin.
	readRetryDelay = 100 * time.Millisecond
)

// responder answers for a set of addresses with one protocol on one
// interface. It owns three goroutines, a reader, an answerer and an
// announcer, that stop when stop is called or the context given to
// startResponder ends. The reader queues the requests for addresses in
// the set; the answerer takes what is queued, waits once for the
// membership to have read what reached it before (gate.caughtUp), and
// answers each, so that the wait, a loopback round trip on a healthy
// node, is paid once per batch rather than once per request.
//
// The address set is read under mu on every frame and replaced under mu by
// set, and each answer or announcement is written while mu is still held
// for reading: once set (or stop) returns, no frame for an address it
// removed is in flight or will be sent.
type responder struct {
	log        logr.Logger
	link       Link
	proto      Protocol
	conn       FrameConn
	codec      codec
	clock      clock.WithTicker
	reannounce time.Duration
	gate       *gate

	mu    sync.RWMutex
	addrs map[netip.Addr]*addrMetrics

	// groups are the solicited-node groups joined (NDP with a
	// GroupMember connection only); touched only by set and stop, which
	// the Announcer serializes.
	groups map[netip.Addr]struct{}

	// asked are the requests read for addresses in the set, waiting for
	// the answerer.
	asked chan question

	schedMu sync.Mutex
	bursts  []burst
	wake    chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// askedQueue is how many requests wait for the answerer, and the most it
// answers after one wait for the membership; more wait in the socket.
const askedQueue = 256

// burst is one takeover's announcements still to send.
type burst struct {
	addrs []netip.Addr // sorted
	left  int
	due   time.Time
}

func startResponder(ctx context.Context, log logr.Logger, l Link, p Protocol, conn FrameConn, clk clock.WithTicker, reannounce time.Duration, g *gate) *responder {
	r := &responder{
		log:        log.WithValues("interface", l.Name, "protocol", p),
		link:       l,
		proto:      p,
		conn:       conn,
		codec:      codecFor(p),
		clock:      clk,
		reannounce: reannounce,
		gate:       g,
		groups:     map[netip.Addr]struct{}{},
		asked:      make(chan question, askedQueue),
		wake:       make(chan struct{}, 1),
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.wg.Go(func() { r.readLoop(ctx) })
	r.wg.Go(func() { r.answerLoop(ctx) })
	r.wg.Go(func() { r.announceLoop(ctx) })
	return r
}

func codecFor(p Protocol) codec {
	if p == ARP {
		return arpCodec{}
	}
	return ndpCodec{}
}

// set makes want the addresses r answers for; the new ones are announced
// at once and then on the repeat schedule. r keeps want: the caller must
// not change it afterwards.
func (r *responder) set(want map[netip.Addr]*addrMetrics) {
	// Join before answering, leave after: a solicitation is never lost
	// for an address in the set.
	groups := r.groupsFor(want)
	r.joinGroups(groups)
	r.mu.Lock()
	old := r.addrs
	r.addrs = want
	r.mu.Unlock()
	r.leaveGroupsExcept(groups)

	var added []netip.Addr
	for addr := range want {
		if _, ok := old[addr]; !ok {
			added = append(added, addr)
		}
	}
	if len(added) > 0 {
		slices.SortFunc(added, netip.Addr.Compare)
		r.schedule(burst{addrs: added, left: 1 + announceRepeats, due: r.clock.Now()})
	}
}

// stop stops answering before it returns, then closes the connection and
// waits for r's goroutines.
func (r *responder) stop() {
	r.mu.Lock()
	r.addrs = nil
	r.mu.Unlock()
	r.cancel()
	if err := r.conn.Close(); err != nil {
		r.log.Error(err, "closing layer-2 socket")
	}
	r.wg.Wait()
}

func (r *responder) readLoop(ctx context.Context) {
	buf := make([]byte, maxFrameLen)
	for {
		n, _, err := r.conn.ReadFrom(buf)
		if err != nil {
			// stop cancels ctx before it closes the connection, so an
			// error after that is the closing, whatever its type.
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			r.log.Error(err, "reading frames failed; retrying")
			select {
			case <-ctx.Done():
				return
			case <-r.clock.After(readRetryDelay):
			}
			continue
		}
		q, ok := r.question(buf[:n])
		if !ok {
			continue
		}
		// A full queue holds the reader back, and the requests behind wait
		// in the socket, as they did before the queue.
		select {
		case r.asked <- q:
		case <-ctx.Done():
			return
		}
	}
}

// answerLoop answers the queued requests, a batch at a time.
func (r *responder) answerLoop(ctx context.Context) {
	batch := make([]question, 0, askedQueue)
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-r.asked:
			batch = append(batch[:0], a)
		}
		for more := true; more && len(batch) < cap(batch); {
			select {
			case a := <-r.asked:
				batch = append(batch, a)
			default:
				more = false
			}
		}
		r.answerAll(batch)
	}
}

// handle answers frame at once if it asks for an address in the set.
func (r *responder) handle(frame []byte) {
	if q, ok := r.question(frame); ok {
		r.answerAll([]question{q})
	}
}

// question parses frame and returns its question when it asks for an
// address in the set, counting the request. The question owns its bytes.
func (r *responder) question(frame []byte) (question, bool) {
	q, ok := r.codec.question(frame)
	if !ok || bytes.Equal(q.senderMAC, r.link.HardwareAddr) {
		return question{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.addrs[q.target]
	if m == nil {
		return question{}, false
	}
	m.requests.Inc()
	q.senderMAC = slices.Clone(q.senderMAC)
	return q, true
}

// answerAll answers the requests, each if its address is still in the
// set, once the membership has caught up (gate.caughtUp): it has then read
// what reached it before any of them was read.
func (r *responder) answerAll(batch []question) {
	if r.gate != nil && !r.gate.caughtUp() {
		return
	}
	for _, q := range batch {
		r.answer(q)
	}
}

func (r *responder) answer(q question) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.addrs[q.target]
	if m == nil {
		return
	}
	answer, err := r.codec.answer(r.link.HardwareAddr, q)
	if err != nil {
		r.log.V(1).Info("cannot answer", "ip", q.target, "from", q.senderIP, "error", err.Error())
		return
	}
	if err := r.write(answer); err != nil {
		if !errors.Is(err, errGateClosed) {
			r.log.Error(err, "sending answer", "ip", q.target, "to", q.senderIP)
		}
		return
	}
	m.responses.Inc()
}

// errGateClosed: the gate stopped the frame (gate.go).
var errGateClosed = errors.New("layer-2 gate closed")

func (r *responder) write(frame []byte) error {
	if r.gate != nil && !r.gate.open(r.link.Index) {
		return errGateClosed
	}
	_, err := r.conn.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[:6])})
	return err
}

func (r *responder) schedule(b burst) {
	r.schedMu.Lock()
	r.bursts = append(r.bursts, b)
	r.schedMu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *responder) announceLoop(ctx context.Context) {
	var reannounce <-chan time.Time
	if r.reannounce > 0 {
		t := r.clock.NewTicker(r.reannounce)
		defer t.Stop()
		reannounce = t.C()
	}
	for {
		now := r.clock.Now()
		due, next := r.takeDue(now)
		for _, addrs := range due {
			r.announce(addrs)
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			// From the time now, not from before sending: a long round
			// must not delay the next one by its own length.
			wait := next.Sub(r.clock.Now())
			if wait <= 0 {
				continue
			}
			timer = r.clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-fire:
		case <-reannounce:
			r.announce(r.current())
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// takeDue removes from the schedule the bursts due at now and returns
// their addresses, and the time the next burst is due (zero if none).
// A repeat is scheduled from now, not from when it was due, so a loop held
// up (a very long burst) does not fire its repeats back to back.
func (r *responder) takeDue(now time.Time) (due [][]netip.Addr, next time.Time) {
	r.schedMu.Lock()
	defer r.schedMu.Unlock()
	kept := r.bursts[:0]
	for _, b := range r.bursts {
		if !b.due.After(now) {
			due = append(due, b.addrs)
			b.left--
			b.due = now.Add(announceSpacing)
		}
		if b.left > 0 {
			kept = append(kept, b)
			if next.IsZero() || b.due.Before(next) {
				next = b.due
			}
		}
	}
	clear(r.bursts[len(kept):])
	r.bursts = kept
	return due, next
}

// announce sends the announcements of each address still in the set, in
// order, once the membership has caught up (gate.caughtUp). The
// lock is taken per address, so replacing the set waits for at most one
// address's frames.
func (r *responder) announce(addrs []netip.Addr) {
	if len(addrs) == 0 || (r.gate != nil && !r.gate.caughtUp()) {
		return
	}
	for _, addr := range addrs {
		r.announceOne(addr)
	}
}

func (r *responder) announceOne(addr netip.Addr) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.addrs[addr]
	if m == nil {
		return
	}
	frames, err := r.codec.announcements(r.link.HardwareAddr, addr)
	if err != nil {
		r.log.Error(err, "building announcement", "ip", addr)
		return
	}
	for _, f := range frames {
		if err := r.write(f); err != nil {
			if !errors.Is(err, errGateClosed) {
				r.log.Error(err, "sending announcement", "ip", addr)
			}
			return
		}
		m.gratuitous.Inc()
	}
}

// current is the set, sorted.
func (r *responder) current() []netip.Addr {
	r.mu.RLock()
	defer r.mu.RUnlock()
	addrs := make([]netip.Addr, 0, len(r.addrs))
	for addr := range r.addrs {
		addrs = append(addrs, addr)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return addrs
}

// groupsFor is the set of solicited-node groups want needs, or nil when r
// does not manage groups.
func (r *responder) groupsFor(want map[netip.Addr]*addrMetrics) map[netip.Addr]struct{} {
	if _, ok := r.conn.(GroupMember); !ok || r.proto != NDP {
		return nil
	}
	groups := make(map[netip.Addr]struct{}, len(want))
	for addr := range want {
		if g, err := ndp.SolicitedNodeMulticast(addr); err == nil {
			groups[g] = struct{}{}
		}
	}
	return groups
}

func (r *responder) joinGroups(groups map[netip.Addr]struct{}) {
	gm, ok := r.conn.(GroupMember)
	if !ok {
		return
	}
	for g := range groups {
		if _, joined := r.groups[g]; joined {
			continue
		}
		if err := gm.JoinGroup(g); err != nil {
			r.log.Error(err, "joining solicited-node group", "group", g)
			continue
		}
		r.groups[g] = struct{}{}
	}
}

func (r *responder) leaveGroupsExcept(groups map[netip.Addr]struct{}) {
	gm, ok := r.conn.(GroupMember)
	if !ok {
		return
	}
	for g := range r.groups {
		if _, keep := groups[g]; keep {
			continue
		}
		if err := gm.LeaveGroup(g); err != nil {
			r.log.Error(err, "leaving solicited-node group", "group", g)
		}
		delete(r.groups, g)
	}
}
