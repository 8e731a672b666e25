package layer2

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// DefaultRescanInterval is how often Start looks for interfaces that
// appeared, vanished or changed, unless Options says otherwise. A scan is
// one netlink dump; interfaces change rarely, and failover never waits
// for a scan.
const DefaultRescanInterval = 2 * time.Second

// Options configure an Announcer. The zero value is the production setup.
type Options struct {
	// Registerer receives the layer-2 metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
	// ReannounceInterval, when positive, repeats the announcement of
	// every address at this interval, for segments whose switches or
	// hosts forget. Zero turns it off.
	ReannounceInterval time.Duration
	// RescanInterval is how often Start rescans interfaces; zero means
	// DefaultRescanInterval.
	RescanInterval time.Duration
	// InterfacesChanged, when set, is called from Start's goroutine after
	// a rescan changed which interfaces answer for an address, so the
	// caller can call Announce again and report the new answering set.
	// It should return quickly.
	InterfacesChanged func()
	// CarrierReturned, when set, is called with an interface's name as
	// soon as the kernel says its carrier came back (a cable plugged in
	// again, a switch port back up) on an interface that answers for an
	// address, or answered when its carrier went: the node may have been
	// cut off and replaced meanwhile. Interfaces that answer nothing (a
	// pod's veth coming up) are not reported. It should return quickly.
	CarrierReturned func(name string)
	// StallLimit is how long this process may go without running before
	// it stops answering everything (see gate); zero means
	// DefaultStallLimit, negative turns the check off.
	StallLimit time.Duration
	// Stalled, when set, is called once the Announcer has stopped
	// answering because the process did not run for twice StallLimit or
	// more (frozen, starved): the node has been declared dead and
	// replaced meanwhile, so the caller starts over as for
	// CarrierReturned. Answering resumes at the next Announce of nothing.
	// After a shorter stall the Announcer falls silent for StallLimit and
	// then answers again by itself, unless told to start over (gate.go).
	// It should return quickly.
	Stalled func(gap time.Duration)
	// NodeAddresses are this node's own addresses (--host): an address
	// outside every subnet of the node is answered on the interfaces
	// that carry one of them.
	NodeAddresses []netip.Addr
	// Links lists the host's interfaces; nil means SystemLinks.
	Links func() ([]Link, error)
	// Open opens a responder's connection; nil means OpenPacketConn.
	Open OpenFunc
	// Clock drives announcements and rescans; nil means the real clock.
	Clock clock.WithTicker
}

// Announcer answers ARP and NDP for the addresses it is given, on the
// interfaces allowed for each, and announces the addresses it takes over.
// Its methods are safe for concurrent use.
type Announcer struct {
	log     logr.Logger
	opts    Options
	metrics *metrics
	started chan struct{} // closed when Start begins

	mu         sync.Mutex
	runCtx     context.Context // Start's; nil before Start
	stopped    bool            // Start has returned
	want       map[netip.Addr][]string
	counters   map[netip.Addr]*addrMetrics
	links      []Link // last successful scan
	responders map[responderKey]*responder
	openErrors map[responderKey]string
	answering  map[netip.Addr][]string // last result, for InterfacesChanged
	exclude    []*regexp.Regexp        // SetExcluded's

	// answeringOn holds the indexes of the interfaces with a responder,
	// for the carrier watch and the gate, which must not wait for mu.
	answeringOn atomic.Pointer[map[int]bool]
	// gate may stop every frame before it is sent (gate.go).
	gate *gate
}

// NewAnnouncer returns an Announcer that answers for nothing until
// Announce is called and Start runs.
func NewAnnouncer(log logr.Logger, opts Options) *Announcer {
	if opts.RescanInterval <= 0 {
		opts.RescanInterval = DefaultRescanInterval
	}
	if opts.Links == nil {
		opts.Links = SystemLinks
	}
	if opts.Open == nil {
		opts.Open = OpenPacketConn
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StallLimit == 0 {
		opts.StallLimit = DefaultStallLimit
	}
	a := &Announcer{
		log:        log,
		opts:       opts,
		metrics:    newMetrics(log, opts.Registerer),
		started:    make(chan struct{}),
		counters:   map[netip.Addr]*addrMetrics{},
		responders: map[responderKey]*responder{},
		openErrors: map[responderKey]string{},
	}
	// Real monotonic time, whatever Options.Clock: a stall is the
	// process's, not the schedule's.
	epoch := time.Now()
	a.gate = newGate(opts.StallLimit, func() time.Duration { return time.Since(epoch) }, a.answersAnything, a.stalled)
	return a
}

// stalled is the gate's report of a stall that stopped the answering.
func (a *Announcer) stalled(gap time.Duration, long bool) {
	if !long {
		a.log.Info("this process did not run for longer than the stall limit; answering nothing until it has run as long again",
			"stalledFor", gap.Round(time.Millisecond), "limit", a.opts.StallLimit)
		return
	}
	a.log.Info("this process did not run for twice the stall limit or more; answering nothing until told to start over",
		"stalledFor", gap.Round(time.Millisecond), "limit", a.opts.StallLimit)
	if a.opts.Stalled != nil {
		a.opts.Stalled(gap)
	}
}

// Announce replaces the set of addresses this node answers ARP (IPv4) /
// NDP (IPv6) for. want maps each address to the interface names allowed to
// answer for it; an empty list means the usable interfaces that face the
// address's LAN: on its subnet, else carrying the node's own address
// (selection.lan).
// Addresses newly in the set get gratuitous ARP / unsolicited NA at once,
// repeated three times 250 ms apart. Addresses removed are no longer
// answered, nor announced, by the time Announce returns.
//
// answering holds, for each address that at least one interface answers
// for, those interfaces' names, sorted; missing lists, sorted, the listed
// names that match no interface on this host (the other interfaces keep
// answering). Keys that are not plain addresses (invalid, with a zone, or
// IPv4-mapped IPv6) are ignored and appear in neither.
//
// Announce waits for Start to be running (responders live under Start's
// context); if ctx ends first, or Start has already returned, nothing
// answers and answering is nil. want is not retained. Cost: one interface
// scan and O(addresses × interfaces) map work; nothing per address is
// sent synchronously.
func (a *Announcer) Announce(ctx context.Context, want map[netip.Addr][]string) (answering map[netip.Addr][]string, missing []string) {
	clean := a.validate(want)
	select {
	case <-a.started:
	case <-ctx.Done():
		a.log.Info("announce abandoned before the announcer started", "error", ctx.Err().Error())
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil, makePlan(clean, a.scan(), a.selection()).missing
	}
	a.want = clean
	for addr := range clean {
		if a.counters[addr] == nil {
			a.counters[addr] = a.metrics.forAddr(addr)
		}
	}
	answering, missing = a.apply()
	if len(clean) == 0 {
		// Nothing is answered: what closed the gate no longer matters.
		a.gate.reset()
	}
	for addr := range a.counters {
		if _, ok := clean[addr]; !ok {
			delete(a.counters, addr)
			a.metrics.forget(addr)
		}
	}
	a.answering = answering
	return answering, missing
}

// validate copies want, dropping the keys Announce ignores.
func (a *Announcer) validate(want map[netip.Addr][]string) map[netip.Addr][]string {
	clean := make(map[netip.Addr][]string, len(want))
	for addr, names := range want {
		if !addr.IsValid() || addr.Zone() != "" || addr.Is4In6() {
			a.log.Info("ignoring an address that is not plain IPv4 or IPv6", "ip", addr)
			continue
		}
		clean[addr] = slices.Clone(names)
	}
	return clean
}

// Start is a manager.Runnable: it lets Announce proceed, rescans
// interfaces every RescanInterval (reopening responders for interfaces
// that appeared, were re-created or changed their MAC), and stops
// answering everything when ctx ends. It returns nil then; calling it a
// second time is an error.
func (a *Announcer) Start(ctx context.Context) error {
	a.mu.Lock()
	if a.runCtx != nil {
		a.mu.Unlock()
		return errors.New("layer2 announcer started twice")
	}
	a.runCtx = ctx
	a.mu.Unlock()
	close(a.started)
	var wg sync.WaitGroup
	defer wg.Wait()
	a.watchCarrier(ctx, &wg)
	// The time before Start (cache sync) is no stall. A fence stays: the
	// speaker's start over, which opens the gate again, may come later.
	a.gate.rebase()
	if a.opts.StallLimit > 0 {
		wg.Go(func() { a.heartbeat(ctx) })
	}

	ticker := a.opts.Clock.NewTicker(a.opts.RescanInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			a.shutdown()
			return nil
		case <-ticker.C():
			if a.rescan() && a.opts.InterfacesChanged != nil {
				a.opts.InterfacesChanged()
			}
		}
	}
}

// heartbeat ticks the gate, so that a stall is noticed even when no frame
// is asked for. It has its own goroutine and real-time ticker: nothing it
// does waits for a lock, so only the process not running delays it.
func (a *Announcer) heartbeat(ctx context.Context) {
	t := time.NewTicker(a.opts.StallLimit / 5)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.gate.tick()
		}
	}
}

// watchCarrier runs the carrier watch for CarrierReturned, opened here so
// that it lives in the network namespace Start runs in.
func (a *Announcer) watchCarrier(ctx context.Context, wg *sync.WaitGroup) {
	if a.opts.CarrierReturned == nil {
		return
	}
	w, err := OpenCarrierWatch()
	if err != nil {
		a.log.Error(err, "cannot follow the interfaces' carrier; a link that comes back is noticed through the membership only")
		return
	}
	wg.Go(func() {
		if err := w.Run(ctx, a.answersOn, a.linkLost, a.gate.linkBack, a.opts.CarrierReturned); err != nil {
			a.log.Error(err, "stopped following the interfaces' carrier")
		}
	})
}

// rescan re-applies the current set to the interfaces there are now and
// reports whether that changed which interfaces answer.
func (a *Announcer) rescan() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return false
	}
	answering, _ := a.apply()
	changed := !maps.EqualFunc(answering, a.answering, slices.Equal[[]string])
	a.answering = answering
	return changed
}

func (a *Announcer) shutdown() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	for key, r := range a.responders {
		r.stop()
		delete(a.responders, key)
	}
	for addr := range a.counters {
		a.metrics.forget(addr)
	}
	clear(a.counters)
	a.want, a.answering = nil, nil
	a.answeringOn.Store(nil)
}

// scan lists the links, falling back to the last good scan when listing
// fails (a transient netlink error should not stop answering).
func (a *Announcer) scan() []Link {
	links, err := a.opts.Links()
	if err != nil {
		a.log.Error(err, "listing interfaces failed; using the last list")
		return a.links
	}
	a.links = links
	return links
}

// apply brings the responders in line with a.want and the links there are
// now. Called with a.mu held.
func (a *Announcer) apply() (answering map[netip.Addr][]string, missing []string) {
	p := makePlan(a.want, a.scan(), a.selection())
	for key, r := range a.responders {
		l, ok := p.links[key.link]
		if len(p.assign[key]) == 0 || !ok || !l.Usable() || l.Index != r.link.Index || !bytes.Equal(l.HardwareAddr, r.link.HardwareAddr) {
			a.log.Info("no longer answering on interface", "interface", key.link, "protocol", key.proto)
			r.stop()
			delete(a.responders, key)
		}
	}
	answering = map[netip.Addr][]string{}
	for _, key := range p.keys() {
		r := a.responders[key]
		if r == nil {
			if r = a.open(key, p.links[key.link]); r == nil {
				continue
			}
			a.responders[key] = r
		}
		addrs := p.assign[key]
		set := make(map[netip.Addr]*addrMetrics, len(addrs))
		for _, addr := range addrs {
			set[addr] = a.counters[addr]
			answering[addr] = append(answering[addr], key.link)
		}
		r.set(set)
	}
	on := make(map[int]bool, len(a.responders))
	for _, r := range a.responders {
		on[r.link.Index] = true
	}
	a.answeringOn.Store(&on)
	// Keys came in link order, so each list is already sorted.
	return answering, p.missing
}

func (a *Announcer) selection() selection {
	return selection{node: a.opts.NodeAddresses, exclude: a.exclude}
}

// SetExcluded sets the patterns of the interface names that never answer,
// even when an L2Advertisement lists them (MetalLB's
// announcedInterfacesToExclude), and applies them at once. Call Announce
// afterwards to learn which interfaces answer now.
func (a *Announcer) SetExcluded(patterns []*regexp.Regexp) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exclude = slices.Clone(patterns)
	if a.runCtx != nil && !a.stopped {
		a.answering, _ = a.apply()
	}
}

// answersOn reports whether the interface with this index answers for at
// least one address now.
func (a *Announcer) answersOn(index int) bool {
	on := a.answeringOn.Load()
	return on != nil && (*on)[index]
}

// answersAnything reports whether any interface answers for an address.
func (a *Announcer) answersAnything() bool {
	on := a.answeringOn.Load()
	return on != nil && len(*on) > 0
}

// Quiet stops every frame for the stall limit of running time: another
// speaker suspects this node (it missed acks) and declares it dead at the
// end of the suspicion unless this node's refutation gets there first.
// Answering through that time could mean answering beside the node that
// takes its addresses over; the declared-dead message, if it comes, ends
// the quiet in a start over (Fence), and if it does not, answers resume by
// themselves. It does nothing while nothing is answered, and returns at
// once: it is called from the membership's goroutines.
func (a *Announcer) Quiet() {
	if a.answersAnything() {
		a.gate.quiet()
		// Debug only: this runs under memberlist's state lock, which
		// logs the refutation itself, and a log write can wait.
		a.log.V(1).Info("another speaker suspects this node; answering nothing for the stall limit, in case it declares it dead",
			"limit", a.opts.StallLimit)
	}
}

// FollowMembership makes every frame wait until the membership has read
// what reached it before the frame's request came (membership.Members.
// CaughtUp; gate.go, "a membership behind"): a declaration of this node's
// death read meanwhile stops the frame. Call it before Start.
func (a *Announcer) FollowMembership(caughtUp func(timeout time.Duration) bool) {
	a.gate.membership = caughtUp
	a.gate.onBehind = func(behind bool) {
		if behind {
			a.log.Info("the membership has not read what reached it within the stall limit; answering nothing until it has, "+
				"since this node may have been declared dead meanwhile", "limit", a.opts.StallLimit)
			return
		}
		a.log.Info("the membership has caught up; answering again")
	}
}

// Fence stops every frame at once, answers and announcements, until the
// next Announce of nothing: the others declared this node dead and answer
// for its addresses already, and the speaker's start over, which ends
// with that Announce, may be seconds away on a busy node. It closes the
// gate while nothing is answered too: a speaker whose grace is about to
// end could otherwise announce its addresses in the round that runs
// before the one that starts it over. The caller must then start over
// with an Announce of nothing, as the speaker's fence does. It returns at
// once, so that it can be called from the membership's own goroutines.
func (a *Announcer) Fence() { a.gate.fence() }

// linkLost stops every frame on an interface whose carrier went while it
// answered, until the speaker starts over (gate).
func (a *Announcer) linkLost(index int) {
	a.log.Info("carrier lost on an interface that answers; sending nothing there until the speaker starts over", "index", index)
	a.gate.linkLost(index)
}

// open starts a responder, or logs why it could not (once per distinct
// error: the next rescan tries again).
func (a *Announcer) open(key responderKey, l Link) *responder {
	conn, err := a.opts.Open(l, key.proto)
	if err != nil {
		if a.openErrors[key] != err.Error() {
			a.log.Error(err, "cannot answer on interface", "interface", key.link, "protocol", key.proto)
			a.openErrors[key] = err.Error()
		}
		return nil
	}
	delete(a.openErrors, key)
	a.log.Info("answering on interface", "interface", key.link, "index", l.Index, "mac", l.HardwareAddr.String(), "protocol", key.proto)
	return startResponder(a.runCtx, a.log, l, key.proto, conn, a.opts.Clock, a.opts.ReannounceInterval, a.gate)
}
