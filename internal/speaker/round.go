package speaker

import (
	"context"
	"maps"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/lbclass"
	"github.com/steadylb/steadylb/internal/speaker/election"
	"github.com/steadylb/steadylb/internal/speaker/l2decide"
)

// A round turns one batch of work into decisions and carries them out in
// the handover order (invariant 8):
//
//	scope    which Services and addresses the work touches
//	decide   the owner of each touched address, and who still guards it
//	announce one Announce call with the whole new set
//	report   say what the objects of the Services touched should list;
//	         objsync.L2 writes them in the background
//	tell     events, metrics, ConfigurationState
//
// Stopping happens in the Announce call, before the object is shrunk or
// deleted. Starting waits until no other live node's object guards the
// address, and, on a node that just started, for StartGrace.

// roundScope is what one round revisits.
type roundScope struct {
	services map[types.NamespacedName]bool
	addrs    map[netip.Addr]bool
	// state: the ConfigurationState must be checked.
	state bool
	// interfaces: the host's interfaces changed, so the Announcer is asked
	// again even if the set of addresses stays the same.
	interfaces bool
	// fence: another speaker declared this node dead, or a link came back,
	// or the process stalled.
	fence bool
	// all: everything is revisited (configuration, Nodes).
	all bool
	// everyAddress: every known address is decided again, from what was
	// read of the Services before (membership, fence).
	everyAddress bool
	// bgpResend: BGP routes that a failed Update left pending are sent
	// again.
	bgpResend bool
	// bgpSessions: the Router's sessions or faults changed.
	bgpSessions bool
}

// round applies one batch. Work that fails is queued again with backoff.
func (s *Speaker) round(ctx context.Context, batch []work) {
	r := &roundRun{s: s, ctx: ctx, retry: map[work]bool{}, warnings: map[types.NamespacedName][]string{},
		deferred: map[netip.Addr]bool{}, handbackAt: map[netip.Addr]time.Time{}}
	r.run(batch)
	for _, w := range batch {
		if !r.retry[w] {
			s.queue.Forget(w)
		}
	}
	for w := range r.retry {
		s.queue.AddRateLimited(w)
	}
	for _, w := range batch {
		s.queue.Done(w)
	}
}

// roundRun is the state of one round.
type roundRun struct {
	s     *Speaker
	ctx   context.Context
	view  *view
	scope roundScope
	retry map[work]bool
	// warnings collects this round's announceFailed notes per Service.
	warnings map[types.NamespacedName][]string
	// deferred are the addresses this node would start now but for
	// StartGrace.
	deferred map[netip.Addr]bool
	// waiting are the addresses this node is elected for but another live
	// node still guards.
	waiting waitingNote
	// handbackAt are the addresses this node is elected for again soon
	// after it handed them to another live node, and when it may take
	// them back (handoff.go).
	handbackAt map[netip.Addr]time.Time
}

// waitingNote gathers a round's addresses that wait for their previous
// owner, for one log line: a handback of hundreds of addresses would
// otherwise log hundreds of lines at once, on the node that is busiest.
type waitingNote struct {
	count int
	first netip.Addr
	nodes []string
}

func (w *waitingNote) add(a netip.Addr, blocking []string) {
	if w.count == 0 {
		w.first = a
	}
	w.count++
	for _, n := range blocking {
		if !slices.Contains(w.nodes, n) {
			w.nodes = append(w.nodes, n)
		}
	}
}

func (w *waitingNote) log(l logr.Logger) {
	if w.count == 0 {
		return
	}
	slices.Sort(w.nodes)
	l.Info("elected, waiting for the previous owners to stop answering", "addresses", w.count, "first", w.first, "answeredBy", w.nodes)
}

func (r *roundRun) run(batch []work) {
	s := r.s
	clock := startRoundClock()
	r.scope = r.collect(batch)
	r.view = s.newView(r.ctx)
	clock.step("collect")
	// Fence first: a node that starts over looks for the others again
	// in this very round.
	r.fence()
	r.noteJoined()
	s.pruneHandoffs()
	touched := r.reindex()
	clock.step("reindex")
	decisions := r.decide(touched)
	clock.step("decide")

	next, nextServed := maps.Clone(s.want), maps.Clone(s.served)
	departed := map[netip.Addr][]*v1beta1.ServiceL2Status{}
	for _, a := range sortedAddrSet(decisions) {
		d := decisions[a]
		answer := false
		if d.Owner == s.opts.NodeName {
			g, err := r.view.othersGuarding(a)
			if err != nil {
				s.log.Error(err, "read the ServiceL2Status objects guarding an address", "address", a)
				r.retry[forAddress(a)] = true
				continue
			}
			departed[a] = g.departed
			_, already := s.want[a]
			answer = len(g.blocking) == 0 && (already || !r.held())
			if len(g.blocking) == 0 && !answer {
				r.deferred[a] = true
			}
			if until, hold := s.handoffHold(a, g.blocking); hold && answer && !already {
				answer, r.handbackAt[a] = false, until
			}
			if len(g.blocking) > 0 {
				r.waiting.add(a, g.blocking)
			}
		}
		if answer {
			next[a], nextServed[a] = d.Interfaces, d.Services
		} else {
			if _, was := s.want[a]; was {
				s.noteHandoff(a, d.Owner)
			}
			delete(next, a)
			delete(nextServed, a)
		}
	}

	clock.step("guards")
	r.waiting.log(s.log)
	oldServed := s.served
	r.announce(next, nextServed)
	clock.step("announce")
	affected := r.affected(decisions, oldServed)
	r.report(affected)
	r.deleteDeparted(departed)
	clock.step("report")
	r.bgpRound()
	clock.step("bgp")
	r.tell(affected, decisions)
	r.revisitDeferred()
	clock.step("tell")
	clock.report(s.log, len(batch), len(decisions))
}

// noteJoined starts the start grace once this node has found the other
// speakers (or JoinWait has passed, or there are none). It runs in every
// round, not only when the node is elected: a node that owns nothing yet
// must have its grace behind it when an owner fails, or that failover
// would wait the grace out too.
func (r *roundRun) noteJoined() {
	s := r.s
	if !s.joined.IsZero() {
		return
	}
	waited := time.Since(s.booted) >= s.opts.JoinWait
	if len(r.view.live) < 2 && !waited && s.peers.OthersExist(r.ctx) {
		return
	}
	s.joined = time.Now()
	s.metrics.graceEnd.Store(s.joined.Add(s.opts.StartGrace).UnixNano())
	s.log.Info("found the other speakers; starting to answer after the grace", "live", len(r.view.live), "grace", s.opts.StartGrace)
	time.AfterFunc(s.opts.StartGrace, func() { s.settleOnce.Do(func() { close(s.settledIn) }) })
}

// fence stops answering everything when another speaker declared this
// node dead, or a link came back, and starts over as a speaker that just
// started: it finds the others again, then waits the start grace. The
// others took its addresses over the moment they declared it dead, while
// this node, frozen or cut off, did not know; now each address it owns
// returns by the clean handover: the others see it live again and stop,
// and it starts once their objects are gone and the grace has passed.
// Until then the addresses are answered by whoever took them over, or by
// nobody for a moment, never by two nodes. The grace starts over even
// when this node answers nothing right now: a node cut off may be about
// to declare the others dead and take their addresses, while they still
// answer. It also contacts the other speakers at once, so that the
// membership heals within the grace rather than at the next re-join.
func (r *roundRun) fence() {
	s := r.s
	if !r.scope.fence {
		return
	}
	s.peers.Poke()
	// Within the first grace too: a declaration names this process's
	// fence token (membership's fence.go), so it is never about the
	// node's previous speaker. A speaker starved while it starts is
	// declared dead like any other, the node that answered meanwhile goes
	// on answering, and a grace that went on would end with both
	// answering until the membership healed (the 1,000-address handback's
	// double answers).
	if !s.joined.IsZero() {
		// As if it had just started: it finds the others again, then
		// waits the grace. A node cut off declared the others dead;
		// counting the grace from now would let it answer before they
		// have heard from it and stopped.
		s.joined, s.booted = time.Time{}, time.Now()
		s.metrics.graceEnd.Store(math.MaxInt64)
		s.metrics.fences.Inc()
		s.log.Info("this node may have been replaced (declared dead, a link came back, or the process stalled); answering nothing until the grace has passed",
			"stopping", len(s.want), "grace", s.opts.StartGrace)
	}
	// Even when nothing is wanted, and while still looking for the
	// others: an Announce of nothing is also what lets an announcer that
	// stopped on its own (a stall, a lost carrier) or was fenced
	// (Announcer.Fence, which closes the gate even before the first
	// answer) send again once the grace has passed.
	r.scope.interfaces = true
	r.announce(map[netip.Addr][]string{}, map[netip.Addr][]types.NamespacedName{})
}

// held reports whether this node must not start answering yet: a node
// that just started waits until it has found the other speakers, and then
// StartGrace more. The current owners see it in the membership and stop
// well within that, and their objects, written in the background, may
// not be on the API server yet, so only the wait keeps the two from
// answering together.
func (r *roundRun) held() bool {
	s := r.s
	return s.joined.IsZero() || time.Since(s.joined) < s.opts.StartGrace
}

// revisitDeferred queues the addresses held back for when the wait ends.
func (r *roundRun) revisitDeferred() {
	s := r.s
	left := s.opts.JoinWait - time.Since(s.booted)
	if !s.joined.IsZero() {
		left = s.opts.StartGrace - time.Since(s.joined)
	}
	for a := range r.deferred {
		s.queue.AddAfter(forAddress(a), left)
	}
	for a, at := range r.handbackAt {
		s.queue.AddAfter(forAddress(a), time.Until(at))
	}
}

// collect reads the batch: configuration reloads, and which Services and
// addresses to revisit.
func (r *roundRun) collect(batch []work) roundScope {
	s := r.s
	sc := roundScope{services: map[types.NamespacedName]bool{}, addrs: map[netip.Addr]bool{}}
	all := false
	for _, w := range batch {
		switch w.kind {
		case serviceWork:
			sc.services[w.service] = true
			delete(s.facts, w.service)
		case addressWork:
			sc.addrs[w.addr] = true
		case configWork:
			changed, err := s.reloadConfig(r.ctx)
			if err != nil {
				s.log.Error(err, "reload configuration")
				r.retry[w] = true
			}
			all = all || changed
			sc.state = true
		case everythingWork:
			all = true
		case membersWork:
			sc.everyAddress = true
		case stateWork:
			s.stateShown = nil
			sc.state = true
		case interfacesWork:
			all, sc.interfaces = true, true
		case fenceWork:
			sc.everyAddress, sc.fence = true, true
		case bgpResendWork:
			sc.bgpResend = true
		case bgpSessionsWork:
			sc.bgpSessions, sc.state = true, true
		case excludeWork:
			changed, err := s.exclusions.Reload(r.ctx)
			if err != nil {
				s.log.Error(err, "reload interface exclusions")
				r.retry[w] = true
			}
			if changed {
				all, sc.interfaces = true, true
			}
			sc.state = true
		}
	}
	sc.all = all
	if sc.everyAddress && !all {
		r.everyAddress(&sc)
	}
	if all {
		keys, err := r.allServices()
		if err != nil {
			s.log.Error(err, "list services")
			r.retry[everything] = true
		}
		for _, k := range keys {
			sc.services[k] = true
		}
		for a := range s.want {
			sc.addrs[a] = true
		}
	}
	return sc
}

// everyAddress puts every address this node knows of in scope: those its
// index holds, those it answers and those its objects list. Services are
// not read again; those it holds objects for are revisited, so that their
// objects follow as after any other round.
func (r *roundRun) everyAddress(sc *roundScope) {
	s := r.s
	for a := range s.index.byAddress {
		sc.addrs[a] = true
	}
	for a := range s.want {
		sc.addrs[a] = true
	}
	for _, svc := range s.statuses.Services() {
		sc.services[svc] = true
	}
}

// allServices are every Service that may matter: ours with an address,
// the indexed ones, and those this node holds an object for.
func (r *roundRun) allServices() ([]types.NamespacedName, error) {
	s := r.s
	keys := append(s.index.keys(), s.statuses.Services()...)
	var list corev1.ServiceList
	if err := s.cache.List(r.ctx, &list); err != nil {
		return keys, err
	}
	for i := range list.Items {
		svc := &list.Items[i]
		if lbclass.Owns(svc, s.opts.LBClass) && len(svc.Status.LoadBalancer.Ingress) > 0 {
			keys = append(keys, client.ObjectKeyFromObject(svc))
		}
	}
	return keys, nil
}

// reindex brings the index up to date for the Services in scope and
// returns every address to decide: theirs, old and new, the ones this
// node's objects for them list, and the addresses in scope.
func (r *roundRun) reindex() map[netip.Addr]bool {
	s := r.s
	touched := maps.Clone(r.scope.addrs)
	for key := range r.scope.services {
		svc, err := r.view.service(key)
		if err != nil {
			s.log.Error(err, "read service", "service", key)
			r.retry[forService(key)] = true
			continue
		}
		var addrs []netip.Addr
		if svc != nil {
			var bad []string
			addrs, bad = statusAddresses(svc)
			if len(bad) > 0 {
				s.log.Info("ignoring status.loadBalancer.ingress entries that are not IP addresses", "service", key, "entries", bad)
			}
		}
		for _, a := range s.index.set(key, addrs) {
			touched[a] = true
		}
		for _, a := range addrs {
			touched[a] = true
		}
		held, _ := s.statuses.Held(key)
		for _, a := range held {
			touched[a] = true
		}
	}
	return touched
}

// decide elects the owner of every touched address.
func (r *roundRun) decide(touched map[netip.Addr]bool) map[netip.Addr]l2decide.Decision {
	s := r.s
	out := make(map[netip.Addr]l2decide.Decision, len(touched))
	for a := range touched {
		if s.cfg == nil {
			out[a] = l2decide.Decision{Reason: l2decide.NoConfiguration}
			continue
		}
		in, err := r.view.input(a)
		if err != nil {
			s.log.Error(err, "read the inputs of an address", "address", a)
			r.retry[forAddress(a)] = true
			continue
		}
		out[a] = l2decide.Decide(in, s.cfg, election.Owner)
	}
	s.metrics.decided.Add(float64(len(out)))
	return out
}

// announce hands the new set to the Announcer when it differs, or when
// the interfaces changed and what answers must be read again.
func (r *roundRun) announce(next map[netip.Addr][]string, nextServed map[netip.Addr][]types.NamespacedName) {
	s := r.s
	if r.scope.interfaces || !sameWant(s.want, next) {
		started, stopped := diffKeys(s.want, next)
		answering, missing := s.opts.Announcer.Announce(r.ctx, next)
		s.want, s.answering = next, answering
		missing = slices.Clone(missing)
		slices.Sort(missing)
		missing = slices.Compact(missing)
		if !slices.Equal(missing, s.missing) {
			s.missing = missing
			r.scope.state = true
		}
		if len(started)+len(stopped) > 0 {
			s.log.Info("announcement changed", "started", firstOf(started), "startedCount", len(started),
				"stopped", firstOf(stopped), "stoppedCount", len(stopped), "announcing", len(next))
		}
	}
	s.served = nextServed
}

// affected are the Services whose objects, metrics or events may change:
// those in scope and those on a decided address, before and after.
func (r *roundRun) affected(decisions map[netip.Addr]l2decide.Decision, oldServed map[netip.Addr][]types.NamespacedName) []types.NamespacedName {
	s := r.s
	set := maps.Clone(r.scope.services)
	for a := range decisions {
		for _, svc := range s.index.services(a) {
			set[svc] = true
		}
		for _, svc := range oldServed[a] {
			set[svc] = true
		}
		for _, svc := range s.served[a] {
			set[svc] = true
		}
	}
	return slices.SortedFunc(maps.Keys(set), compareKeys)
}

// holding are the addresses this node answers for on behalf of svc.
func (s *Speaker) holding(svc types.NamespacedName) []netip.Addr {
	var out []netip.Addr
	for _, a := range s.index.addresses(svc) {
		if slices.Contains(s.served[a], svc) {
			out = append(out, a)
		}
	}
	return out
}

// report says what the objects of the affected Services should list now:
// after Announce, so an object only shrinks or goes once its addresses
// are no longer answered. A Service with an address deferred by
// StartGrace keeps its object as it is, so a restarted speaker that
// still owns its addresses keeps the objects it adopted.
func (r *roundRun) report(affected []types.NamespacedName) {
	s := r.s
	for _, svc := range affected {
		if !r.scope.fence && slices.ContainsFunc(s.index.addresses(svc), func(a netip.Addr) bool { return r.deferred[a] }) {
			continue
		}
		addrs := s.holding(svc)
		s.objects.Want(svc, addrs, s.interfacesFor(addrs))
	}
}

// interfacesFor are the interfaces that answer for any of addrs.
func (s *Speaker) interfacesFor(addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, s.answering[a]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// deleteDeparted has the objects of nodes that left the membership
// deleted, for the addresses this node now answers for: they block
// nothing, and nobody else would delete them.
func (r *roundRun) deleteDeparted(departed map[netip.Addr][]*v1beta1.ServiceL2Status) {
	s := r.s
	for a, list := range departed {
		if _, answering := s.want[a]; answering {
			for _, obj := range list {
				s.objects.Remove(obj)
			}
		}
	}
}

func sameWant(a, b map[netip.Addr][]string) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// diffKeys returns the addresses only in b (started) and only in a
// (stopped), sorted.
func diffKeys(a, b map[netip.Addr][]string) (started, stopped []netip.Addr) {
	for k := range b {
		if _, ok := a[k]; !ok {
			started = append(started, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			stopped = append(stopped, k)
		}
	}
	slices.SortFunc(started, netip.Addr.Compare)
	slices.SortFunc(stopped, netip.Addr.Compare)
	return started, stopped
}

// logListMax bounds the addresses a log line lists: a node taking over a
// thousand addresses would otherwise write one line of 20 KB, and every
// goroutine that logs waits while a slow log pipe takes it.
const logListMax = 20

// firstOf is the first logListMax of addrs, for a log line that gives the
// count beside it.
func firstOf(addrs []netip.Addr) []netip.Addr {
	return addrs[:min(len(addrs), logListMax)]
}

func sortedAddrSet[V any](m map[netip.Addr]V) []netip.Addr {
	return slices.SortedFunc(maps.Keys(m), netip.Addr.Compare)
}
