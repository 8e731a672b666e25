package speaker

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/internal/speaker/bgpdecide"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/routes"
)

// bgpState is the BGP side of the speaker; it belongs to the loop
// goroutine. Layer 2 and BGP read the same round (the same Services, the
// same view) and keep apart everything they decide.
type bgpState struct {
	router bgp.Router
	table  *routes.Table
	model  *bgpdecide.Model
	// running are the sessions the Router last accepted, sorted by name;
	// fresh are those among them that have not had their first Update
	// (a new session connects only after it, see bgp.Router).
	running []bgp.Session
	fresh   map[string]bool
	// refused are the sessions the Router refused, with its reason, for
	// the ConfigurationState.
	refused map[string]string
	// up are the sessions established when the Router last said, and
	// faults the failing steps it retries (for the ConfigurationState).
	up     map[string]bool
	faults []bgp.Fault
	// seenUp are the sessions seen established since this speaker
	// started, and started is when it first ran sessions: see accepted.
	seenUp    map[string]bool
	started   time.Time
	graceOver bool
	// addrs are, per Service, the addresses this node advertises for it;
	// shown is what the metrics and events last said.
	addrs map[types.NamespacedName][]netip.Addr
	shown map[types.NamespacedName][]netip.Addr
}

func newBGPState(r bgp.Router) *bgpState {
	return &bgpState{router: r, table: routes.New(), fresh: map[string]bool{}, refused: map[string]string{},
		up: map[string]bool{}, seenUp: map[string]bool{}, addrs: map[types.NamespacedName][]netip.Addr{}, shown: map[types.NamespacedName][]netip.Addr{}}
}

func (b *bgpState) names() []string {
	out := make([]string, len(b.running))
	for i, s := range b.running {
		out[i] = s.Name
	}
	return out
}

// bgpRound is the BGP part of a round: the sessions when the
// configuration or this node may have changed, then the routes of the
// Services in scope, then one Update per session whose routes changed,
// then the objects, metrics and events of the Services whose
// advertisement changed. A session going up or down revisits the objects
// of every advertised Service: they list only established sessions.
func (r *roundRun) bgpRound() {
	s := r.s
	b := s.bgp
	if b == nil {
		return
	}
	self := s.selfFacts(r.ctx)
	if r.scope.all || b.model == nil {
		b.model = bgpdecide.NewModel(s.cfg, self)
		r.setSessions()
		r.scope.state = true // the model's problems may have changed
	}
	affected := maps.Clone(r.scope.services)
	if r.followSessions() || r.scope.all || r.scope.bgpResend {
		for _, svc := range b.table.Sources() {
			affected[svc] = true
		}
		// Objects adopted from an earlier run, for Services that may be
		// gone or no longer advertised: revisited so they go.
		for _, svc := range s.bgpStatuses.Services() {
			affected[svc] = true
		}
	}
	for svc := range r.scope.services {
		r.decideBGPService(svc, self)
	}
	r.flush()
	for _, svc := range slices.SortedFunc(maps.Keys(affected), compareKeys) {
		s.bgpObjects.Want(svc, b.accepted(svc))
		r.show(svc, protocolBGP, b.shown, b.addrs[svc])
	}
}

// followSessions reads which sessions are established and which steps
// fail, when the Router said they changed, and reports whether the
// established ones did.
func (r *roundRun) followSessions() bool {
	b := r.s.bgp
	if !r.scope.bgpSessions {
		return false
	}
	b.faults = b.router.Faults()
	up := map[string]bool{}
	for _, name := range b.router.Established() {
		up[name] = true
		b.seenUp[name] = true
	}
	if maps.Equal(up, b.up) && !r.graceEnded() {
		return false
	}
	b.up = up
	return true
}

// bgpStatusGrace is how long after a speaker starts its sessions have to
// come up before its ServiceBGPStatus objects stop listing them: a
// restarted speaker's objects, adopted from its earlier run, are neither
// emptied nor deleted while its sessions reconnect (GoBGP's first dial
// alone takes up to 2 s).
const bgpStatusGrace = 10 * time.Second

// graceEnded reports the first bgpSessions round after bgpStatusGrace,
// which the round that first set sessions queued.
func (r *roundRun) graceEnded() bool {
	b := r.s.bgp
	if b.started.IsZero() || b.graceOver || time.Since(b.started) < bgpStatusGrace {
		return false
	}
	b.graceOver = true
	return true
}

// accepted are the sessions a Service's ServiceBGPStatus lists: those
// that hold every one of its routes and are established, so the router
// has them; in the speaker's first bgpStatusGrace, also those not yet
// seen established at all.
func (b *bgpState) accepted(svc types.NamespacedName) []string {
	young := !b.started.IsZero() && time.Since(b.started) < bgpStatusGrace
	return slices.DeleteFunc(b.table.Advertised(svc), func(name string) bool {
		return !b.up[name] && (!young || b.seenUp[name])
	})
}

// decideBGPService recomputes one Service's routes.
func (r *roundRun) decideBGPService(svc types.NamespacedName, self *facts.Node) {
	s, b := r.s, r.s.bgp
	sf, err := r.view.serviceFacts(svc)
	if err != nil {
		s.log.Error(err, "read service for BGP", "service", svc)
		r.retry[forService(svc)] = true
		return
	}
	d := bgpdecide.Decide(sf, s.index.addresses(svc), s.cfg, b.model, self)
	b.table.Set(svc, d.Entries)
	if len(d.Addrs) == 0 {
		delete(b.addrs, svc)
	} else {
		b.addrs[svc] = d.Addrs
	}
}

// setSessions hands the Router the sessions of the current model when
// they differ from the running ones. Sessions that go take their routes
// with them; new ones get their first Update in this round's flush. A
// session the Router refuses is left out and reported, and the others run.
func (r *roundRun) setSessions() {
	s, b := r.s, r.s.bgp
	if bgpdecide.SameSessions(b.running, b.model.Sessions) {
		if len(b.refused) > 0 {
			b.refused = map[string]string{}
			r.scope.state = true
		}
		return
	}
	refused := map[string]string{}
	err := b.router.SetSessions(r.ctx, b.model.Sessions)
	if err != nil {
		// The Router refuses the whole list for one bad session; leave
		// out the ones it names and run the others.
		for _, name := range bgp.RefusedSessions(err) {
			refused[name] = err.Error()
		}
		if len(refused) > 0 {
			b.model.Without(setOf(refused))
			err = b.router.SetSessions(r.ctx, b.model.Sessions)
		}
	}
	if !maps.Equal(refused, b.refused) {
		b.refused = refused
		r.scope.state = true
	}
	if err != nil {
		// The running sessions stay; routes for the others wait, pending.
		s.log.Error(err, "set the BGP sessions; retrying")
		r.retry[everything] = true
		return
	}
	if b.started.IsZero() {
		b.started = time.Now()
		s.queue.AddAfter(bgpSessions, bgpStatusGrace)
	}
	old := b.names()
	b.running = slices.Clone(b.model.Sessions)
	now := b.names()
	for _, name := range old {
		if !slices.Contains(now, name) {
			b.table.DropSession(name)
			delete(b.fresh, name)
		}
	}
	for _, name := range now {
		if !slices.Contains(old, name) {
			b.fresh[name] = true
		}
	}
	s.log.Info("BGP sessions set", "sessions", now, "refused", slices.Sorted(maps.Keys(refused)))
}

// problems are the BGP peers this node cannot run, for the
// ConfigurationState, sorted.
func (b *bgpState) problems() []string {
	if b == nil || b.model == nil {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(b.refused)) {
		e := config.FieldError{Kind: config.KindBGPPeer, Name: name, Field: "spec", Detail: b.refused[name]}
		out = append(out, e.Error())
	}
	for _, f := range b.faults {
		e := config.FieldError{Kind: config.KindBGPPeer, Name: f.Session, Field: f.Field, Detail: fmt.Sprintf("failing, retried every %v: %s", bgp.RetryInterval, f.Err)}
		out = append(out, e.Error())
	}
	return out
}

func setOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// flush sends each running session what changed for it, and new sessions
// their first Update even when empty. A failed Update leaves its routes
// pending and is retried with backoff.
func (r *roundRun) flush() {
	s, b := r.s, r.s.bgp
	changes := b.table.Changes(b.names())
	for _, name := range slices.Sorted(maps.Keys(b.fresh)) {
		if !slices.ContainsFunc(changes, func(c routes.Change) bool { return c.Session == name }) {
			changes = append(changes, routes.Change{Session: name})
		}
	}
	for _, c := range changes {
		if err := b.router.Update(r.ctx, c.Session, c.Advertise, c.Withdraw); err != nil {
			s.log.Error(err, "update BGP routes; retrying", "session", c.Session,
				"advertise", len(c.Advertise), "withdraw", len(c.Withdraw))
			r.retry[bgpResend] = true
			continue
		}
		b.table.Sent(c)
		delete(b.fresh, c.Session)
		if len(c.Advertise)+len(c.Withdraw) > 0 {
			s.log.V(1).Info("BGP routes updated", "session", c.Session, "advertised", len(c.Advertise), "withdrawn", len(c.Withdraw))
		}
	}
}

// shutdownBGP clears the BGP metrics and deletes this node's
// ServiceBGPStatus objects. The routes are the Router's to close: with
// graceful restart they stay at the router until this node is back.
func (s *Speaker) shutdownBGP(ctx context.Context) {
	if s.bgp == nil {
		return
	}
	for svc, addrs := range s.bgp.shown {
		s.metrics.withdraw(svc, protocolBGP, addrs)
	}
	select {
	case <-s.bgpObjects.Stopped():
	case <-ctx.Done():
	}
	s.forEach(ctx, s.bgpStatuses.Services(), func(ctx context.Context, svc types.NamespacedName) error {
		return s.bgpStatuses.Release(ctx, svc)
	})
}
