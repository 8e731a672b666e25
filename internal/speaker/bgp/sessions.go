package bgp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

// Errors of the Router's methods; match with errors.Is.
var (
	ErrNoSession = errors.New("no such BGP session")
	ErrStopped   = errors.New("BGP sessions stopped")
)

// Options configure Sessions.
type Options struct {
	// Registerer receives the metallb_bgp_* metrics and the BFD ones;
	// nil registers none.
	Registerer prometheus.Registerer
	// NodeAddress is the default router ID when it is IPv4.
	NodeAddress netip.Addr
	// NodeName, hashed, is the router ID of an IPv6-only node whose
	// sessions set none.
	NodeName string
	// RestartTime is the graceful restart time asked of the routers;
	// DefaultRestartTime when zero.
	RestartTime time.Duration
	// Departing, asked once when Start's context ends, says whether this
	// node is leaving for good rather than restarting: then every session
	// closes with Cease, so the routers withdraw its routes at once,
	// graceful restart or not. Nil, or false: a restart, and the graceful
	// restart sessions close without a NOTIFICATION.
	Departing func(context.Context) bool
	// BFD runs the BFD sessions; when nil, New makes one that Start
	// runs. A caller passing its own runs it and delivers its events to
	// Sessions.OnBFDEvent.
	BFD *bfd.Manager
}

// Sessions is the Router: one GoBGP server per Session, in process, and
// the BFD sessions beside them. See the package documentation.
type Sessions struct {
	log     logr.Logger
	opts    Options
	bfd     *bfd.Manager
	ownBFD  bool
	changed chan struct{}

	mu       sync.Mutex
	stopped  bool
	sessions map[string]*runner
	// byBFD finds the session of a BFD event; it has its own lock as BFD
	// events arrive while SetSessions may hold mu.
	bfdMu sync.Mutex
	byBFD map[bfd.Key]*runner
}

var _ Router = (*Sessions)(nil)

// New returns the Sessions; Start runs them.
func New(log logr.Logger, o Options) (*Sessions, error) {
	if o.RestartTime == 0 {
		o.RestartTime = DefaultRestartTime
	}
	if o.RestartTime < time.Second || o.RestartTime > 4095*time.Second {
		return nil, fmt.Errorf("graceful restart time %v is outside 1s-4095s", o.RestartTime)
	}
	s := &Sessions{
		log:      log,
		opts:     o,
		changed:  make(chan struct{}, 1),
		sessions: map[string]*runner{},
		byBFD:    map[bfd.Key]*runner{},
	}
	s.bfd, s.ownBFD = o.BFD, o.BFD == nil
	if s.ownBFD {
		s.bfd = bfd.NewManager(log.WithName("bfd"), bfd.Options{OnStateChange: s.OnBFDEvent, Registerer: o.Registerer})
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(&collector{s: s}); err != nil {
			return nil, fmt.Errorf("register the BGP metrics: %w", err)
		}
	}
	return s, nil
}

// RetryInterval is how often a session step that failed (advertising the
// routes carried over a reset, connecting, adding the BFD session) is
// tried again.
const RetryInterval = time.Second

// Start runs until ctx ends, then closes every session: a graceful
// restart one without a NOTIFICATION, so its router keeps the routes
// while this node restarts; the others with Cease, so theirs drop them.
// While it runs, the steps that failed are retried every RetryInterval.
func (s *Sessions) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	bfdDone := make(chan error, 1)
	if s.ownBFD {
		wg.Go(func() { bfdDone <- s.bfd.Start(ctx) })
	} else {
		bfdDone <- nil
	}
	wg.Go(func() { s.retry(ctx) })
	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true
	runners := make([]*runner, 0, len(s.sessions))
	for _, r := range s.sessions {
		runners = append(runners, r)
	}
	s.sessions = map[string]*runner{}
	s.mu.Unlock()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	graceful := len(runners) == 0 || !s.departing(stopCtx)
	for _, r := range runners {
		r.stop(stopCtx, graceful)
	}
	wg.Wait()
	if err := <-bfdDone; err != nil {
		return fmt.Errorf("BFD: %w", err)
	}
	return nil
}

// departing asks Options.Departing, bounded by DepartingTimeout.
func (s *Sessions) departing(ctx context.Context) bool {
	if s.opts.Departing == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, DepartingTimeout)
	defer cancel()
	leaving := s.opts.Departing(ctx)
	if leaving {
		s.log.Info("this node is leaving: closing every BGP session with Cease, so the routers withdraw its routes now")
	} else {
		s.log.Info("this speaker is restarting: graceful restart sessions close without a NOTIFICATION, their routers keep the routes")
	}
	return leaving
}

// DepartingTimeout bounds Options.Departing: a shutdown must not wait on
// an API server that does not answer.
const DepartingTimeout = 2 * time.Second

// retry catches up every session that owes a step, each RetryInterval,
// until ctx ends.
func (s *Sessions) retry(ctx context.Context) {
	t := time.NewTicker(RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if !s.stopped {
			for _, name := range slices.Sorted(maps.Keys(s.sessions)) {
				s.catchUp(ctx, s.sessions[name])
			}
		}
		s.mu.Unlock()
	}
}

// SetSessions: see Router. Every Session is validated first; an invalid
// one fails the call with an error naming it and its field, and nothing
// changes.
func (s *Sessions) SetSessions(ctx context.Context, sessions []Session) error {
	want := make(map[string]Session, len(sessions))
	var errs []error
	for _, c := range sessions {
		if err := c.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := want[c.Name]; dup {
			errs = append(errs, &SessionError{Session: c.Name, Reason: "given twice"})
		}
		want[c.Name] = c
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	// Start the new servers first: if one fails, nothing has changed.
	fresh := map[string]*runner{}
	for name, c := range want {
		old := s.sessions[name]
		if old != nil && old.cfg.Equal(c) {
			continue
		}
		r := newRunner(s.log, c, &s.opts, s.signal)
		if err := r.start(ctx); err != nil {
			for _, f := range fresh {
				f.stop(ctx, false)
			}
			return err
		}
		fresh[name] = r
	}
	for name, old := range s.sessions {
		if _, keep := want[name]; !keep {
			s.log.Info("stopping BGP session", "session", name)
			s.close(ctx, old)
			delete(s.sessions, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fresh)) {
		r := fresh[name]
		if old := s.sessions[name]; old != nil {
			s.log.Info("resetting BGP session: its settings changed", "session", name)
			s.close(ctx, old)
			r.inherit(old)
		}
		s.sessions[name] = r
		// A failure here is the session's to retry, not the call's: the
		// new settings are accepted, and the routes follow when they can.
		s.catchUp(ctx, r)
	}
	s.signal()
	return nil
}

// catchUp carries out what a session owes: the routes carried over its
// reset, its connection once its first Update came (and its VRF device
// exists), its BFD session once connected. A step that fails is recorded
// as a fault (Faults and the metrics report it) and tried again by the
// next call, which the retry loop makes every RetryInterval; a step that
// works clears its fault. Sessions.mu is held.
func (s *Sessions) catchUp(ctx context.Context, r *runner) {
	changed := false
	if r.cfg.VRF != "" {
		err := vrfExists(r.cfg.VRF)
		changed = r.setFault(fieldVRF, err)
		if err != nil {
			s.signalIf(changed)
			return
		}
	}
	if r.behind() {
		err := r.update(nil, nil)
		if err == nil && r.ready && !r.connected {
			err = r.connect(ctx)
		}
		changed = r.setFault(fieldRoutes, err) || changed
	}
	if r.cfg.BFD != nil && r.connected && r.bfdKey == nil {
		changed = r.setFault(fieldBFD, s.addBFD(ctx, r)) || changed
	}
	s.signalIf(changed)
}

func (s *Sessions) signalIf(changed bool) {
	if changed {
		s.signal()
	}
}

// close stops a session for good (Cease: its router drops the routes).
func (s *Sessions) close(ctx context.Context, r *runner) {
	s.dropBFD(ctx, r)
	r.updates.observe(r.sentUpdates(ctx))
	r.stop(ctx, false)
}

// Update: see Router.
func (s *Sessions) Update(ctx context.Context, session string, advertise []Route, withdraw []netip.Prefix) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	r := s.sessions[session]
	if r == nil {
		return fmt.Errorf("%w: %q", ErrNoSession, session)
	}
	if err := r.update(advertise, withdraw); err != nil {
		s.signalIf(r.setFault(fieldRoutes, err))
		return err
	}
	s.catchUp(ctx, r)
	return nil
}

// Established: see Router.
func (s *Sessions) Established() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var up []string
	for name, r := range s.sessions {
		if r.isUp() {
			up = append(up, name)
		}
	}
	slices.Sort(up)
	return up
}

// Faults: see Router.
func (s *Sessions) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Fault
	for _, name := range slices.Sorted(maps.Keys(s.sessions)) {
		out = append(out, s.sessions[name].faultList()...)
	}
	return out
}

// Changed: see Router.
func (s *Sessions) Changed() <-chan struct{} { return s.changed }

func (s *Sessions) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}
