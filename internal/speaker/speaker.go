package speaker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgppasswords"
	"github.com/steadylb/steadylb/internal/speaker/bgpstatus"
	"github.com/steadylb/steadylb/internal/speaker/excludel2"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/internal/speaker/objsync"
	"github.com/steadylb/steadylb/internal/speaker/peerjoin"
)

// Speaker decides which addresses this node answers for and keeps the
// Announcer, the ServiceL2Status objects, events, metrics and the
// ConfigurationState in step with that decision. It is a manager.Runnable;
// Setup creates it.
type Speaker struct {
	opts   Options
	client client.Client
	cache  cache.Cache
	// apiReader reads the API server directly, for what the cache does
	// not hold (Departing).
	apiReader client.Reader
	events    events.EventRecorder
	log       logr.Logger
	metrics   *metrics
	queue     workqueue.TypedRateLimitingInterface[work]
	statuses  *l2status.Writer
	objects   *objsync.L2
	peers     *peerjoin.Joiner
	// bgpStatuses and bgpObjects write the ServiceBGPStatus objects; nil,
	// like bgp, when the speaker runs without a Router.
	bgpStatuses *bgpstatus.Writer
	bgpObjects  *objsync.BGP
	// passwords reads the BGPPeers' password Secrets by name; nil without
	// a Router.
	passwords *bgppasswords.Passwords
	// ready is closed once the first round has been applied; settledIn
	// once the start grace has passed.
	ready, settledIn chan struct{}
	settleOnce       sync.Once

	// Everything below belongs to the loop goroutine.

	// booted is when Start began; joined when this node first saw another
	// live speaker, or gave up waiting (see roundRun.held).
	booted, joined time.Time
	cfg            *config.Config
	cfgErr         error  // the latest configuration's errors; cfg is the last valid one
	cfgFingerprint string // of the latest configuration read, valid or not
	cfgObjects     string // the same without the password Secrets: when it changes, they are read again
	index          addressIndex
	// want is the set last given to Announce; answering and missing are
	// what it answered.
	want      map[netip.Addr][]string
	answering map[netip.Addr][]string
	missing   []string
	// served are the Services each address in want is announced for.
	served map[netip.Addr][]types.NamespacedName
	// shown are the addresses each Service is reported announced for, in
	// metrics and by its nodeAssigned event.
	shown map[types.NamespacedName][]netip.Addr
	// warned is the last announceFailed note per Service, so a problem is
	// reported once, not on every round.
	warned map[types.NamespacedName]string
	// exclusions are the interfaces excluded from layer 2 (the
	// metallb-excludel2 ConfigMap).
	exclusions *excludel2.Loader
	// handoffs are the addresses recently handed to another live node
	// (handoff.go).
	handoffs map[netip.Addr]handoff
	// facts are what the decisions read of each Service of ours, kept
	// from round to round until the Service or its EndpointSlices change
	// (every such change queues serviceWork for it): a failover then
	// reads no EndpointSlice again, only the live set changed.
	facts map[types.NamespacedName]*facts.Service
	// stateShown is the ConfigurationState status last written.
	stateShown *v1beta1.ConfigurationStateStatus
	// bgp is the BGP side; nil without a Router.
	bgp *bgpState
}

var _ manager.Runnable = (*Speaker)(nil)

// Setup adds a speaker to a manager whose cache was built with
// CacheOptions: the field indexes, the event handlers that feed its work
// queue, the speaker itself and a readiness check that passes once the
// first decisions are applied.
func Setup(mgr ctrl.Manager, opts Options) (*Speaker, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("speaker options: %w", err)
	}
	opts.defaults()
	m, err := newMetrics(opts.Registerer, opts.NodeName)
	if err != nil {
		return nil, err
	}
	s := &Speaker{
		opts: opts, client: mgr.GetClient(), cache: mgr.GetCache(), apiReader: mgr.GetAPIReader(),
		events: mgr.GetEventRecorder("metallb-speaker"), log: mgr.GetLogger().WithName("speaker").WithValues("node", opts.NodeName),
		metrics: m,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[work](
			10*time.Millisecond, 30*time.Second)),
		ready: make(chan struct{}), settledIn: make(chan struct{}),
		index:    newAddressIndex(),
		want:     map[netip.Addr][]string{},
		served:   map[netip.Addr][]types.NamespacedName{},
		shown:    map[types.NamespacedName][]netip.Addr{},
		facts:    map[types.NamespacedName]*facts.Service{},
		warned:   map[types.NamespacedName]string{},
		handoffs: map[netip.Addr]handoff{},
	}
	s.exclusions = excludel2.NewLoader(mgr.GetCache(), opts.Namespace, s.log, opts.InterfaceExclusions)
	s.statuses = l2status.NewWriter(mgr.GetClient(), l2status.Options{Namespace: opts.Namespace, Node: opts.NodeName})
	s.objects = objsync.NewL2(s.statuses, mgr.GetClient(), s.log.WithName("objects"), opts.WriteParallelism, s.isLive)
	if opts.Router != nil {
		s.bgp = newBGPState(opts.Router)
		s.bgpStatuses = bgpstatus.NewWriter(mgr.GetClient(), bgpstatus.Options{Namespace: opts.Namespace, Node: opts.NodeName})
		s.bgpObjects = objsync.NewBGP(s.bgpStatuses, s.log.WithName("bgp-objects"), opts.WriteParallelism)
		s.passwords = bgppasswords.New(mgr.GetAPIReader(), opts.Namespace, s.log.WithName("passwords"))
	}
	s.peers = peerjoin.New(peerjoin.Options{Reader: mgr.GetCache(), Members: opts.Membership, Namespace: opts.Namespace,
		Selector: opts.PeerSelector, Node: opts.NodeName, Port: opts.PeerPort, Log: s.log.WithName("peers")})
	ctx := context.Background()
	if err := l2status.AddIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := indexEndpointSlices(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := s.watch(ctx); err != nil {
		return nil, err
	}
	if err := mgr.Add(s); err != nil {
		return nil, fmt.Errorf("add speaker: %w", err)
	}
	if err := mgr.AddReadyzCheck("speaker", s.readyCheck); err != nil {
		return nil, fmt.Errorf("add speaker readiness check: %w", err)
	}
	return s, nil
}

// isLive reports whether node is a live member now.
func (s *Speaker) isLive(node string) bool {
	_, found := slices.BinarySearch(s.opts.Membership.Live(), node)
	return found
}

// Ready is closed once the speaker has applied its first decisions.
func (s *Speaker) Ready() <-chan struct{} { return s.ready }

// SettledIn is closed once the start grace has passed: the speaker has
// found the other speakers (or JoinWait has passed) and waited
// StartGrace, and from then on answers at once for what it is elected for.
func (s *Speaker) SettledIn() <-chan struct{} { return s.settledIn }

func (s *Speaker) readyCheck(*http.Request) error {
	select {
	case <-s.ready:
		return nil
	default:
		return errors.New("the speaker has not applied its first decisions yet")
	}
}

// Start runs the speaker until ctx ends: it waits for the caches, joins
// the peers, adopts this node's ServiceL2Status objects from an earlier
// run, and then applies one round per batch of queued work. When ctx ends
// it stops answering and deletes its objects.
func (s *Speaker) Start(ctx context.Context) error {
	s.booted = time.Now()
	if !s.cache.WaitForCacheSync(ctx) {
		return errors.New("speaker: caches did not sync")
	}
	if err := s.peers.JoinAll(ctx); err != nil {
		// Not fatal: a lone speaker still serves, and the joiner retries.
		s.log.Error(err, "join the other speakers")
		s.peers.Poke()
	}
	if err := s.adoptStatuses(ctx); err != nil {
		return err
	}
	if err := s.statusOwner(ctx); err != nil {
		s.log.Error(err, "find this speaker's Pod; ServiceL2Status objects get no owner")
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.objects.Run(ctx) })
	if s.bgp != nil {
		wg.Go(func() { s.bgpObjects.Run(ctx) })
	}
	wg.Go(func() { s.peers.Run(ctx) })
	wg.Go(func() { s.follow(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		s.queue.ShutDown()
	})

	s.queue.Add(reloadConfig)
	s.queue.Add(reloadExclusions)
	s.queue.Add(everything)
	s.queue.AddAfter(joinCheck, s.opts.JoinWait)
	first := true
	for {
		batch, ok := s.nextBatch()
		if !ok {
			break
		}
		if ctx.Err() != nil {
			// Stopping: what is left in the queue no longer matters.
			for _, w := range batch {
				s.queue.Done(w)
			}
			break
		}
		s.round(ctx, batch)
		if first {
			close(s.ready)
			first = false
		}
	}
	s.shutdown()
	return nil
}

// follow revisits every address whenever the live set changes, and
// everything when the host's interfaces change; it fences this node when it was declared dead or a
// link came back, and follows the BGP sessions' states.
func (s *Speaker) follow(ctx context.Context) {
	members, dead := s.opts.Membership.Changed(), s.opts.Membership.DeclaredDead()
	var sessions <-chan struct{} // nil without a Router: never ready
	if s.bgp != nil {
		sessions = s.bgp.router.Changed()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sessions:
			s.queue.Add(bgpSessions)
		case <-members:
			s.queue.Add(membersChanged)
		case <-dead:
			s.queue.Add(fenced)
		case <-s.opts.LinkReturned:
			s.queue.Add(fenced)
		case <-s.opts.InterfacesChanged:
			s.queue.Add(rescanned)
		}
	}
}

// adoptStatuses takes this node's ServiceL2Status objects as held, so the
// first round deletes those it does not announce (invariant: an object
// exists only while its node answers).
func (s *Speaker) adoptStatuses(ctx context.Context) error {
	var list v1beta1.ServiceL2StatusList
	if err := s.cache.List(ctx, &list, client.InNamespace(s.opts.Namespace),
		client.MatchingLabels{v1beta1.LabelNode: s.opts.NodeName}); err != nil {
		return fmt.Errorf("list this node's ServiceL2Status objects: %w", err)
	}
	if err := s.statuses.Adopt(ctx, list.Items); err != nil {
		s.log.Error(err, "delete duplicate ServiceL2Status objects")
	}
	if s.bgp == nil {
		return nil
	}
	var bgpList v1beta1.ServiceBGPStatusList
	if err := s.cache.List(ctx, &bgpList, client.InNamespace(s.opts.Namespace),
		client.MatchingLabels{v1beta1.LabelNode: s.opts.NodeName}); err != nil {
		return fmt.Errorf("list this node's ServiceBGPStatus objects: %w", err)
	}
	if err := s.bgpStatuses.Adopt(ctx, bgpList.Items); err != nil {
		s.log.Error(err, "delete duplicate ServiceBGPStatus objects")
	}
	return nil
}

// statusOwner makes this speaker's Pod the owner of the objects it writes,
// when the Pod is known.
func (s *Speaker) statusOwner(ctx context.Context) error {
	if s.opts.PodName == "" {
		return nil
	}
	pod := &corev1.Pod{}
	if err := s.cache.Get(ctx, types.NamespacedName{Namespace: s.opts.Namespace, Name: s.opts.PodName}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s/%s is not among the speaker Pods: %w", s.opts.Namespace, s.opts.PodName, err)
		}
		return fmt.Errorf("get pod %s/%s: %w", s.opts.Namespace, s.opts.PodName, err)
	}
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	s.statuses.SetOwner(owner)
	if s.bgpStatuses != nil {
		s.bgpStatuses.SetOwner(owner)
	}
	return nil
}

// shutdown stops answering, then deletes this node's objects, so the
// other speakers take over without waiting for the membership to notice.
func (s *Speaker) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if len(s.want) > 0 {
		s.opts.Announcer.Announce(ctx, map[netip.Addr][]string{})
		s.want, s.served = map[netip.Addr][]string{}, map[netip.Addr][]types.NamespacedName{}
	}
	if s.opts.Stopped != nil {
		s.opts.Stopped()
	}
	for svc, addrs := range s.shown {
		s.metrics.withdraw(svc, protocolLayer2, addrs)
	}
	// The background writes end with ctx; none may overlap the deletions.
	select {
	case <-s.objects.Stopped():
	case <-ctx.Done():
	}
	s.forEach(ctx, s.statuses.Services(), func(ctx context.Context, svc types.NamespacedName) error {
		return s.statuses.Release(ctx, svc)
	})
	s.shutdownBGP(ctx)
	s.log.Info("stopped announcing")
}
