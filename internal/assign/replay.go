package assign

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// Step is where the startup barrier serves a Service (steps 3 to 5).
type Step int

const (
	// StepKept: every address the Service shows was registered.
	StepKept Step = iota
	// StepRecalled: the Service shows no address but its allocation
	// record names some.
	StepRecalled
	// StepLost: Restore refused an address the Service shows.
	StepLost
	// StepPending: the Service shows no address.
	StepPending
)

func (s Step) String() string {
	switch s {
	case StepKept:
		return "kept"
	case StepRecalled:
		return "recalled"
	case StepLost:
		return "lost"
	case StepPending:
		return "pending"
	}
	return "unknown"
}

// Cluster is what the controller decides from, as listed at one moment.
type Cluster struct {
	// Pools are the IPAddressPools of the controller's namespace.
	Pools []v1beta1.IPAddressPool
	// Services are every Service, ours or not; Replay picks its own.
	Services []corev1.Service
	// Namespaces give the labels namespace selectors match. A namespace
	// that is missing has no labels, as for the controller.
	Namespaces []corev1.Namespace
	// Reservations are the AddressReservations of every namespace (nil
	// when the cluster has no such CRD: then none are held).
	Reservations []v1alpha1.AddressReservation
	// LBClass is the controller's --lb-class flag.
	LBClass string
	// Now decides which reservations have expired; zero means the time
	// Replay runs.
	Now time.Time
	// Prerestored, if set, restored the book from every Service of
	// Services while they were listed, under Pools, Namespaces and
	// LBClass: the replay starts from it instead of restoring, when it
	// could restore without a refusal. Used once.
	Prerestored *Prerestore
}

// Verdict is the controller's decision for one Service.
type Verdict struct {
	Service ipam.ServiceKey
	// Object is the Service as listed.
	Object *corev1.Service
	Step   Step
	// Shown are the addresses status shows; Addrs those decided; Pool
	// the one they come from.
	Shown, Addrs []netip.Addr
	Pool         string
	// Condition is the AddressAssigned condition the controller writes.
	Condition Condition
	// RequestErr says why the Service's request (see Request) cannot be
	// read.
	RequestErr error
	// Refused are the addresses of its status that Restore did not
	// register, and why (a duplicate, an address in no pool).
	Refused []ipam.Conflict
	// Origin says whether Addrs came back from an AddressReservation or
	// the allocation record in this decision.
	Origin Origin
	// Events are the events the controller emits with the decision.
	Events []Event
	// request is what Request returns, nil when it is the request the
	// book holds the Service's addresses by, as for most Services: then
	// the verdict does not keep a copy of it.
	request *ipam.Request
	book    *ipam.Book
}

// Request is the Service's request as the controller reads it, with the
// pools that admit it; RequestErr says why it cannot be read.
func (v *Verdict) Request() ipam.Request {
	if v.request != nil {
		return *v.request
	}
	r, _ := v.book.HeldRequest(v.Service)
	return r
}

// Condition is what a decision's AddressAssigned condition says: its
// type is always that one, and the API server dates it on write. Kept
// apart from metav1.Condition for those fields' 48 bytes per Service.
type Condition struct {
	Status          metav1.ConditionStatus
	Reason, Message string
}

// Event is one Kubernetes event the controller emits with a decision.
type Event struct {
	Warning      bool
	Reason, Note string
}

// Replayed is the outcome of Replay: the book as the controller holds it
// once its startup barrier has opened, and every decision it took.
type Replayed struct {
	Config *config.Config
	Book   *ipam.Book
	// Verdicts in the order they were decided: steps 3 to 6, each
	// oldest first; only those the caller kept (ReplayKeeping).
	Verdicts []Verdict
	// Reservations are the AddressReservations as the book holds them
	// once every Service is decided, oldest first.
	Reservations []ReservationVerdict
	// byKey indexes Verdicts, built at the first lookup: the replay
	// itself never needs it, and most callers look up a few Services.
	indexOnce sync.Once
	byKey     map[ipam.ServiceKey]int
	// keptTogether counts the kept Services decided by keptUnchanged.
	keptTogether int
}

// decideKeptTogether: a replay decides its leading run of kept Services
// that change nothing with keptUnchanged. Tests turn it off for the
// replay that decides every Service one by one.
var decideKeptTogether = true

// Verdict returns the decision for one Service, if it is ours and was
// kept. Safe for concurrent use.
func (r *Replayed) Verdict(k ipam.ServiceKey) (Verdict, bool) {
	r.indexOnce.Do(func() {
		r.byKey = make(map[ipam.ServiceKey]int, len(r.Verdicts))
		for i := range r.Verdicts {
			r.byKey[r.Verdicts[i].Service] = i
		}
	})
	i, ok := r.byKey[k]
	if !ok {
		return Verdict{}, false
	}
	return r.Verdicts[i], true
}

// ErrNoPools is returned by Replay when the cluster has no pool: the
// controller then keeps every address and decides nothing.
var ErrNoPools = errors.New("no IPAddressPool exists")

// Replay runs the startup barrier over a cluster without writing anything:
// the same restore, the same reservations, the same order and the same
// decide that a starting controller runs, with every write taken as
// accepted. For a cluster the
// controller has settled, that is what the running controller holds.
//
// The error wraps ErrNoPools, or a config.ErrorList for a configuration
// the controller refuses.
func Replay(c Cluster) (*Replayed, error) {
	return ReplayKeeping(c, nil)
}

// ReplayKeeping is Replay keeping in Verdicts only the decisions keep
// reports true for, every decision when keep is nil; keep sees each
// decision once it is complete, Step and Refused included. Every Service
// is decided all the same: a decision the caller does not look at still
// moves the book. A caller that reads a few decisions should keep those
// only: at 10,000 Services the verdicts are a quarter of the bytes a
// replay allocates, and in a fresh process (the plugin) each of those
// bytes lands on a page touched for the first time. keep runs on the
// caller's goroutine, in the order of the decisions, though the leading
// kept Services whose decisions change nothing are decided on two
// (keptUnchanged).
func ReplayKeeping(c Cluster, keep func(*Verdict) bool) (*Replayed, error) {
	nsLabels := namespaceLabelsOf(c.Namespaces)
	owned := OwnedOldestFirst(c.Services, c.LBClass)
	// A Prerestore brings the configuration its book was built under,
	// from the same pools.
	r, cfg, ok := c.Prerestored.take(c.Services)
	if ok {
		r.lost = servicesOf(owned, r.conflicts) // oldest first, as restoreBook finds them
	} else {
		var err error
		if cfg, err = replayConfig(c.Pools); err != nil {
			return nil, err
		}
		if r, err = restoreBook(cfg, owned, nsLabels); err != nil {
			return nil, err
		}
	}
	out := &Replayed{Config: cfg, Book: r.book}
	if keep == nil {
		out.Verdicts = make([]Verdict, 0, len(owned))
	}
	refused := map[ipam.ServiceKey][]ipam.Conflict{}
	for _, cf := range r.conflicts {
		refused[cf.Service] = append(refused[cf.Service], cf)
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	alloc := &Allocator{book: r.book, cfg: cfg, readOnly: true, read: r.read}
	alloc.RegisterReservations(c.Reservations, now)
	// complete adds to a decision of step what the step tells of it.
	complete := func(v *Verdict, step Step) {
		v.Step = step
		if step == StepLost { // only a Service Restore refused is lost
			v.Refused = refused[v.Service]
		}
	}
	steps := StartupSteps(owned, r.lost)
	if decideKeptTogether {
		out.keptTogether = keptUnchanged(alloc, steps[StepKept], nsLabels, func(v *Verdict) {
			complete(v, StepKept)
			if keep == nil || keep(v) {
				out.Verdicts = append(out.Verdicts, *v)
			}
		})
		steps[StepKept] = steps[StepKept][out.keptTogether:]
	}
	var scratch Verdict // the decision at hand when it may not be kept
	_ = ServeSteps(steps, func(svc *corev1.Service, step Step) (bool, error) {
		labels, _ := nsLabels(svc.Namespace)
		// Decided in place when every decision is kept: a Verdict is
		// large, and copying one holding pointers costs write barriers
		// while the collector runs.
		v := &scratch
		if keep == nil {
			out.Verdicts = append(out.Verdicts, Verdict{})
			v = &out.Verdicts[len(out.Verdicts)-1]
		} else {
			scratch = Verdict{}
		}
		if !verdictOf(v, alloc, svc, labels, DeciderFor(step)) {
			if keep == nil {
				out.Verdicts = out.Verdicts[:len(out.Verdicts)-1]
			}
			return false, nil
		}
		complete(v, step)
		if keep != nil && keep(v) {
			out.Verdicts = append(out.Verdicts, *v)
		}
		return true, nil
	})
	out.Reservations = replayedReservations(alloc, c.Services, c.LBClass, now)
	return out, nil
}

// replayConfig is the configuration the controller builds from pools;
// ErrNoPools without any.
func replayConfig(pools []v1beta1.IPAddressPool) (*config.Config, error) {
	if len(pools) == 0 {
		return nil, ErrNoPools
	}
	cfg, err := config.Build(config.Snapshot{Pools: pools})
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return cfg, nil
}

// verdictOf decides one Service into v, which is zero, and takes the write
// as accepted: what it gave up is settled, as apply does once the API
// server confirms. It reports false for a deferred decision, leaving v
// unspecified; with an unchangedOnly allocator, also for a decision that
// would change the book.
func verdictOf(v *Verdict, alloc *Allocator, svc *corev1.Service, nsLabels labels.Set,
	decide func(*Allocator, *corev1.Service, labels.Set) Decision) bool {
	d := decide(alloc, svc, nsLabels)
	if d.Deferred {
		return false
	}
	k := Key(svc)
	if alloc.unchangedOnly {
		if alloc.book.GivingUp(k) { // Settle would free what it gives up
			return false
		}
	} else {
		alloc.book.Settle(k)
	}
	// Most Services show what is decided: one slice serves both.
	shown := d.Addrs
	if len(shown) == 0 || !showsExactly(svc, shown) {
		shown = StatusAddresses(svc)
	}
	v.Service, v.Object, v.Shown, v.Addrs, v.Pool = k, svc, shown, d.Addrs, d.Pool
	v.Condition = Condition{Status: d.Condition.Status, Reason: d.Condition.Reason, Message: d.Condition.Message}
	v.RequestErr, v.Origin = d.requestErr, d.origin
	// The book keeps the request to the end of the replay: no later
	// decision is about this Service.
	if alloc.book.HoldsBy(k, d.request) {
		v.book = alloc.book
	} else {
		req := d.request // its own copy: a pointer into d would move all of d to the heap
		v.request = &req
	}
	if len(d.Events) > 0 {
		// A list of its own, no longer than it must be: a verdict lives
		// as long as the replay, the decision's list may have room to
		// spare.
		v.Events = make([]Event, len(d.Events))
		copy(v.Events, d.Events)
	}
	return true
}

// namespaceLabelsOf looks namespace labels up in a list; a namespace not
// in it has none, as the controller treats one it cannot find.
func namespaceLabelsOf(list []corev1.Namespace) func(string) (labels.Set, error) {
	byName := make(map[string]labels.Set, len(list))
	for _, ns := range list {
		byName[ns.Name] = labels.Set(ns.Labels)
	}
	return func(name string) (labels.Set, error) {
		if l, ok := byName[name]; ok {
			return l, nil
		}
		return labels.Set{}, nil
	}
}
