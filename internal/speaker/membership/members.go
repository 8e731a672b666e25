package membership

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/memberlist"
)

// ErrClosed is returned by Join after Leave or Shutdown.
var ErrClosed = errors.New("membership is shut down")

// membership is the method set the speaker's core consumes; it is
// repeated here so the compiler checks Members keeps providing it.
type membership interface {
	Join(addrs []string) (int, error)
	Live() []string
	Changed() <-chan struct{}
	DeclaredDead() <-chan struct{}
}

var _ membership = (*Members)(nil)

// joinParallelism bounds the peers contacted at once by one Join. Each
// contact is one TCP push/pull of the whole member list.
const joinParallelism = 8

// Members is this speaker's membership in the gossip cluster of speakers.
// All methods are safe for concurrent use. memberlist's goroutines run
// from New until Leave or Shutdown, which the owner must call.
type Members struct {
	log        logr.Logger
	name       string
	ml         *memberlist.Memberlist
	view       *view
	fence      *fence
	transport  *transport
	keyring    *memberlist.Keyring // nil without a key
	self       netip.AddrPort      // as advertised to peers
	bindPort   int
	unregister func() // drops the metrics; nil without a Registerer

	mu     sync.Mutex  // serialises Leave and Shutdown
	closed atomic.Bool // set once, under mu, before memberlist stops
	// stopLoops ends the goroutines New starts (publishTokens,
	// confirmDepartures), which loops.Wait waits for.
	stopLoops chan struct{}
	loops     sync.WaitGroup
	// quiet, set once memberlist has stopped, silences every logger
	// New handed out (untilStopped).
	quiet *atomic.Bool
	// logs writes those loggers' lines (asyncLog).
	logs *asyncLog
}

// New starts memberlist on the bind address: it listens, and knows only
// itself until Join. Options are described on Options; the failure
// detection is tuned as doc.go says.
func New(log logr.Logger, opts Options) (*Members, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	quiet := new(atomic.Bool)
	log = untilStopped(log, quiet)
	logs := newAsyncLog(log.WithName("memberlist"))
	log = logs.wrap(log)
	started := false
	defer func() {
		if !started {
			logs.stop(logStopWait)
		}
	}()
	cfg := lanConfig(opts)
	cfg.Logger = newStdLogger(log.WithName("memberlist"), opts.OnSuspected)
	v := newView(log, time.Now)
	v.self = opts.NodeName
	cfg.Events = v
	var keyring *memberlist.Keyring
	if len(opts.SecretKey) > 0 {
		if keyring, err = memberlist.NewKeyring(nil, opts.SecretKey); err != nil {
			return nil, fmt.Errorf("%w: SecretKey: %v", ErrInvalidOptions, err)
		}
		cfg.Keyring = keyring
	}
	f := newFence(log, opts.NodeName, keyring, v)
	f.onDead = opts.OnDeclaredDead
	v.joined = f.joined // before memberlist runs: no lock needed yet
	cfg.Delegate = f
	transport, err := newTransport(opts.BindAddr, opts.BindPort, cfg.Logger, f.receive, func(err error) {
		log.Error(err, "CaughtUp cannot tell whether the declared-dead messages were read; answering without waiting for them")
	})
	if err != nil {
		return nil, fmt.Errorf("listen for memberlist on %s: %w", hostPort(opts.BindAddr, opts.BindPort), err)
	}
	cfg.Transport = transport
	if v.departures, err = newDepartures(opts.NodeName, transport.self); err != nil {
		_ = transport.Shutdown() // the error that matters is err
		return nil, err
	}
	ml, err := memberlist.Create(cfg)
	if err != nil {
		_ = transport.Shutdown() // may already be closed by memberlist; nothing more to do
		return nil, fmt.Errorf("start memberlist as %q: %w", opts.NodeName, err)
	}
	self := ml.LocalNode()
	selfAddr, _ := netip.AddrFromSlice(self.Addr)
	m := &Members{
		log: log, name: opts.NodeName, ml: ml, view: v, fence: f, transport: transport, keyring: keyring,
		self: netip.AddrPortFrom(selfAddr.Unmap(), self.Port), bindPort: opts.BindPort, quiet: quiet,
		stopLoops: make(chan struct{}), logs: logs,
	}
	if reg := opts.Registerer; reg != nil {
		c := &collector{ml: ml, view: v, transport: transport, fence: f}
		if err := reg.Register(c); err != nil {
			_ = ml.Shutdown()
			return nil, fmt.Errorf("register membership metrics: %w", err)
		}
		m.unregister = func() { reg.Unregister(c) }
	}
	v.mu.Lock()
	v.tell = m.tellDeclaredDead
	v.mu.Unlock()
	m.loops.Go(m.publishTokens)
	m.loops.Go(m.confirmDepartures)
	log.Info("memberlist started", "node", opts.NodeName, "addr", self.Address(), "encrypted", len(opts.SecretKey) > 0)
	started = true
	return m, nil
}

// Join contacts the given peers, "host" (on the bind port) or "host:port",
// and merges their view of the cluster into ours. It returns how many
// peers it reached; the error is non-nil only when it reached none of
// the peers it tried. A peer that is already a live member is not
// contacted again and counts as reached, so calling Join with every
// speaker's address after each change costs only the newcomers; this
// node's own address is skipped and not counted. Up to 8 peers are
// contacted at once, each bounded by a 3s timeout.
func (m *Members) Join(addrs []string) (int, error) {
	if m.closed.Load() {
		return 0, ErrClosed
	}
	known := m.view.liveAddrs()
	var todo []string
	reached := 0
	seen := map[string]bool{}
	for _, a := range addrs {
		ap, literal := m.addrPort(a)
		key := a
		if literal {
			key = ap.String()
		}
		switch {
		case a == "" || seen[key]: // nothing, or said already
		case literal && ap == m.self: // ourselves: nothing to join
		case literal && known[ap]:
			reached++
		default:
			todo = append(todo, a)
		}
		seen[key] = true
	}
	n, errs := m.joinAll(todo)
	reached += n
	if len(errs) > 0 {
		err := errors.Join(errs...)
		if reached == 0 {
			return 0, fmt.Errorf("join memberlist: no peer reached: %w", err)
		}
		m.log.Info("memberlist join reached only some peers", "reached", reached, "failed", len(errs), "error", err.Error())
	}
	return reached, nil
}

// joinAll contacts each address on its own, at most joinParallelism at
// a time, and waits for all of them.
func (m *Members) joinAll(addrs []string) (int, []error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		reached int
		errs    []error
		slots   = make(chan struct{}, joinParallelism)
	)
	for _, a := range addrs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			n, err := m.ml.Join([]string{a})
			mu.Lock()
			defer mu.Unlock()
			reached += n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return reached, errs
}

// addrPort parses a literal "ip" or "ip:port" Join address; host names
// are left to memberlist to resolve.
func (m *Members) addrPort(a string) (netip.AddrPort, bool) {
	if ap, err := netip.ParseAddrPort(a); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	if ip, err := netip.ParseAddr(trimBrackets(a)); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), uint16(m.bindPort)), true
	}
	return netip.AddrPort{}, false
}

func trimBrackets(s string) string {
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// Live returns the names of the live members, this one included, sorted.
// A suspect member still counts as live until it is declared dead. After
// Leave or Shutdown it is the last view. O(n log n).
func (m *Members) Live() []string {
	return m.view.live()
}

// Changed signals after the membership changed (a member joined, left,
// was declared dead, or updated). Signals coalesce: one pending signal
// stands for any number of changes, so a reader calls Live after each
// receive and never misses the latest state. The channel is never
// closed.
func (m *Members) Changed() <-chan struct{} {
	return m.view.changed
}

// CaughtUp reports whether this member has read, within timeout, every
// packet that reached its memberlist socket before the call, a
// declared-dead message among them: such a message fences the announcer
// as it is read (Options.OnDeclaredDead), so a frame sent once CaughtUp,
// called after its request was read, reports true never answers beside a
// member that declared this one dead before that request came. False means the
// reading is that far behind: the member may have been declared dead
// meanwhile, and should answer nothing. In a healthy member it returns in
// about a loopback round trip, and no later than markerSpacing after the
// previous call (inbox.go). Safe for concurrent use.
func (m *Members) CaughtUp(timeout time.Duration) bool {
	return m.transport.inbox.caughtUp(timeout)
}

// DeclaredDead signals, coalesced, each time another member tells this
// one that it declared it dead: this member missed its probes (frozen,
// starved, cut off) and the others may have taken its addresses over
// while it still runs. The channel is never closed.
func (m *Members) DeclaredDead() <-chan struct{} {
	return m.fence.declared
}

// Leave tells the cluster this member is going, waits up to timeout for
// the message to go out, then shuts down. Peers drop it at once instead of
// detecting a failure. It is a no-op once Leave or Shutdown has run.
func (m *Members) Leave(timeout time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return nil
	}
	leaveErr := m.ml.Leave(timeout)
	if leaveErr != nil {
		leaveErr = fmt.Errorf("leave memberlist: %w", leaveErr)
	}
	return errors.Join(leaveErr, m.shutdownLocked())
}

// Shutdown stops memberlist without telling anyone, as a crash would:
// peers notice by failed probes. It is a no-op once Leave or Shutdown has
// run.
func (m *Members) Shutdown() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return nil
	}
	return m.shutdownLocked()
}

func (m *Members) shutdownLocked() error {
	m.closed.Store(true)
	defer m.quiet.Store(true)
	defer m.logs.stop(logStopWait) // before quiet: the last lines are written
	close(m.stopLoops)
	m.loops.Wait()
	if m.unregister != nil {
		m.unregister()
	}
	if err := m.ml.Shutdown(); err != nil {
		return fmt.Errorf("shut memberlist down: %w", err)
	}
	m.log.Info("memberlist stopped")
	return nil
}

// logStopWait bounds how long a shutdown waits for its last log lines.
const logStopWait = time.Second

// publishTokens publishes this member's metadata each time the fence
// draws a new token, so that the next declaration names it: the fence
// cannot, as it runs within memberlist's callbacks, and the speaker gets
// the news with no wait. It runs from New until Leave or Shutdown.
func (m *Members) publishTokens() {
	for {
		select {
		case <-m.stopLoops:
			return
		case <-m.fence.rotated:
			if err := m.ml.UpdateNode(updateTimeout); err != nil {
				m.log.Info("could not publish the new fence token; the next declaration of this member may be refused until it is", "error", err.Error())
			}
		}
	}
}

func hostPort(addr string, port int) string {
	if ip, err := netip.ParseAddr(addr); err == nil {
		return netip.AddrPortFrom(ip, uint16(port)).String()
	}
	return addr + ":" + strconv.Itoa(port)
}
