package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

// runner is one Session: its own GoBGP server (its own ASN, router ID and
// routes, so a change resets it alone), with one neighbor, no listening
// socket, and the routes advertised on it.
//
// The fields above mu belong to the Sessions that owns the runner and are
// used under Sessions.mu only; the ones below mu change from GoBGP's and
// BFD's goroutines too.
type runner struct {
	cfg   Session
	log   logr.Logger
	opts  *Options
	srv   *server.BgpServer
	quiet *atomic.Bool
	// ctx ends when the runner stops; calls to GoBGP made from GoBGP's or
	// BFD's goroutines use it, and goroutines of the runner's own (owned
	// by wg) end with it.
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	changed func()
	routes  map[netip.Prefix]Route
	// owed are routes carried over from the session this one replaced,
	// not yet given to GoBGP.
	owed     map[netip.Prefix]Route
	otherHop netip.Addr // next hop of the other family, found once
	// ready: an Update put the routes in place, so the session may
	// connect; connected: the neighbor was added.
	ready, connected bool
	// faults are the steps that failed, by BGPPeer field, with the last
	// error; catchUp retries them.
	faults map[string]error
	// neighbor is the router's address as GoBGP keys it (resolved from
	// the interface for an unnumbered session).
	neighbor string
	bfdKey   *bfd.Key
	updates  counter

	mu sync.Mutex
	up bool
	// bfdDown: BFD declared the path down, the neighbor is shut.
	bfdDown bool
}

func newRunner(log logr.Logger, cfg Session, o *Options, changed func()) *runner {
	return &runner{
		cfg:     cfg,
		log:     log.WithValues("session", cfg.Name, "peer", cfg.peerLabel()),
		opts:    o,
		changed: changed,
		routes:  map[netip.Prefix]Route{},
		quiet:   &atomic.Bool{},
	}
}

// unicastFamilies are the only address families a speaker advertises.
// Named, they bound GoBGP's tables: left empty, GoBGP makes a table for
// each of the 26 families it knows, in its global and route-server RIBs,
// each table 2,048 shards with a map apiece, about 12 MiB per session
// before the first route.
var unicastFamilies = []uint32{
	uint32(oc.AfiSafiTypeToIntMap[oc.AFI_SAFI_TYPE_IPV4_UNICAST]),
	uint32(oc.AfiSafiTypeToIntMap[oc.AFI_SAFI_TYPE_IPV6_UNICAST]),
}

// start runs the GoBGP server and watches its neighbor's state. The
// neighbor itself is added by connect.
func (r *runner) start(ctx context.Context) error {
	r.srv = server.NewBgpServer(server.LoggerOption(slog.New(newGobgpHandler(r.log.WithName("gobgp"), r.quiet)), nil))
	go r.srv.Serve()
	err := r.srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:        r.cfg.MyASN,
		RouterId:   r.cfg.routerID(*r.opts).String(),
		ListenPort: -1, // we connect; nothing listens
		Families:   unicastFamilies,
	}})
	if err != nil {
		r.quiet.Store(true)
		r.srv.Stop()
		return fmt.Errorf("session %q: start BGP: %w", r.cfg.Name, err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if err := r.srv.WatchEvent(r.ctx, server.WatchEventMessageCallbacks{OnPeerUpdate: r.onPeer}, server.WatchPeer()); err != nil {
		r.stop(ctx, false)
		return fmt.Errorf("session %q: watch the neighbor: %w", r.cfg.Name, err)
	}
	return nil
}

// connect adds the neighbor: GoBGP then dials the router and, once the
// session is up, sends the routes it holds followed by End-of-RIB.
func (r *runner) connect(ctx context.Context) error {
	if err := r.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: r.cfg.peerConfig(r.opts.RestartTime, true)}); err != nil {
		return fmt.Errorf("session %q: add the neighbor: %w", r.cfg.Name, err)
	}
	r.connected = true
	return nil
}

// stop ends the session. Gracefully, a graceful-restart session closes
// without a NOTIFICATION so the router keeps its routes as stale;
// otherwise the router is told (Cease) and drops them.
func (r *runner) stop(ctx context.Context, graceful bool) {
	if r.cancel != nil {
		r.mu.Lock()
		r.cancel()
		r.mu.Unlock()
	}
	r.wg.Wait()
	if err := r.srv.StopBgp(ctx, &api.StopBgpRequest{AllowGracefulRestart: graceful}); err != nil {
		r.log.Error(err, "stop the BGP session")
	}
	// Stop also ends GoBGP's BFD goroutine; its own StopBgp call fails on
	// the stopped server, which is expected and not worth a log line.
	r.quiet.Store(true)
	r.srv.Stop()
	r.setUp(false)
}

// onPeer follows the neighbor's state from GoBGP's watch.
func (r *runner) onPeer(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
	if ev.Type != apiutil.PEER_EVENT_STATE {
		return
	}
	up := ev.Peer.State.SessionState == bgppkt.BGP_FSM_ESTABLISHED
	if up && !r.acceptsASN(ev.Peer.State.PeerASN) {
		r.log.Error(&SessionError{Session: r.cfg.Name, Reason: fmt.Sprintf("dynamicASN: the router's ASN %d is not %s", ev.Peer.State.PeerASN, r.cfg.DynamicASN)},
			"closing the session")
		// Not from GoBGP's own callback, which the shutdown would wait on.
		r.spawn(func(ctx context.Context) {
			if err := r.shutdown(ctx, "dynamicASN "+string(r.cfg.DynamicASN)+" does not accept this ASN"); err != nil && ctx.Err() == nil {
				r.log.Error(err, "close the session")
			}
		})
		return
	}
	r.setUp(up)
}

// spawn runs f on a goroutine the runner owns (stop waits for it), with
// the runner's context; once the runner stops, it runs nothing.
func (r *runner) spawn(f func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return
	}
	r.wg.Go(func() { f(r.ctx) })
}

// acceptsASN says whether a router that opened with asn fits DynamicASN
// (GoBGP, given peer AS 0, accepts any).
func (r *runner) acceptsASN(asn uint32) bool {
	switch r.cfg.DynamicASN {
	case config.DynamicASNInternal:
		return asn == r.cfg.localASN()
	case config.DynamicASNExternal:
		return asn != r.cfg.localASN()
	}
	return true
}

func (r *runner) setUp(up bool) {
	r.mu.Lock()
	was := r.up
	r.up = up
	r.mu.Unlock()
	if was != up {
		r.log.Info("BGP session changed state", "up", up)
		r.changed()
	}
}

func (r *runner) isUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up
}

// shutdown closes the session with a NOTIFICATION and keeps it closed
// until enable.
func (r *runner) shutdown(ctx context.Context, why string) error {
	return r.srv.DisablePeer(ctx, &api.DisablePeerRequest{Address: r.neighbor, Communication: why})
}

func (r *runner) enable(ctx context.Context) error {
	return r.srv.EnablePeer(ctx, &api.EnablePeerRequest{Address: r.neighbor})
}

// Field names of the steps that can fail and be retried.
const (
	fieldRoutes = "spec"
	fieldBFD    = "spec.bfdProfile"
	fieldVRF    = "spec.vrf"
)

// setFault records the outcome of a step (nil: it worked) and reports
// whether the session's faults changed. A new or different error is
// logged once, not on every retry.
func (r *runner) setFault(field string, err error) bool {
	old, had := r.faults[field]
	if err == nil {
		if !had {
			return false
		}
		delete(r.faults, field)
		r.log.Info("a failed step of the session works again", "field", field)
		return true
	}
	if had && old.Error() == err.Error() {
		return false
	}
	if r.faults == nil {
		r.faults = map[string]error{}
	}
	r.faults[field] = err
	r.log.Error(err, "a step of the session failed; retrying", "field", field, "every", RetryInterval)
	return true
}

// faultList is the session's faults, sorted by field.
func (r *runner) faultList() []Fault {
	out := make([]Fault, 0, len(r.faults))
	for _, field := range slices.Sorted(maps.Keys(r.faults)) {
		out = append(out, Fault{Session: r.cfg.Name, Field: field, Err: r.faults[field].Error()})
	}
	return out
}
