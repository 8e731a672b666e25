package speaker

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/internal/speaker/statusobj"
)

// objectSync writes this node's ServiceL2Status objects, and deletes the
// departed nodes' ones, in the background. A round only says what each
// object should say; it never waits for the API server. So a failover
// answers for every address it takes over at once, however many Services
// move (their objects follow at the API server's pace), and a round that
// must stop answering, say because the previous owner is back, is never
// stuck behind the writes of the one before.
//
// Each object is written from the latest wish when its turn comes, so a
// burst of changes to one Service costs at most one write per kind
// (create, annotation, status), and a write that is no longer wanted, an
// object for an address this node stopped answering meanwhile, is never
// made. Failed writes are retried with backoff.
type objectSync struct {
	writer      *l2status.Writer
	client      client.Client
	log         logr.Logger
	parallelism int
	queue       workqueue.TypedRateLimitingInterface[objectTask]
	// live reports whether a node is a live member now: a departed node's
	// objects are left alone once it is back (a node declared dead by
	// mistake that refuted it still answers, and its objects say so).
	live func(node string) bool

	mu sync.Mutex
	// wish is what this node's object for each Service should list; no
	// addresses means no object.
	wish map[types.NamespacedName]objectWish
	// departed are other nodes' objects to delete, by object key.
	departed map[types.NamespacedName]*v1beta1.ServiceL2Status
	// done is closed once every worker has stopped.
	done chan struct{}
}

// objectTask is one object to bring in line: this node's object for a
// Service, or a departed node's object.
type objectTask struct {
	key      types.NamespacedName
	departed bool
}

type objectWish struct {
	addrs      []netip.Addr
	interfaces []string
}

func (w objectWish) equal(o objectWish) bool {
	return slices.Equal(w.addrs, o.addrs) && slices.Equal(w.interfaces, o.interfaces)
}

func newObjectSync(w *l2status.Writer, c client.Client, log logr.Logger, parallelism int, live func(string) bool) *objectSync {
	return &objectSync{
		writer: w, client: c, log: log, parallelism: parallelism, live: live,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[objectTask](
			10*time.Millisecond, 30*time.Second)),
		wish:     map[types.NamespacedName]objectWish{},
		departed: map[types.NamespacedName]*v1beta1.ServiceL2Status{},
		done:     make(chan struct{}),
	}
}

// want records what this node's object for svc should list, and queues a
// write when that changed. addrs and interfaces must be sorted.
func (o *objectSync) want(svc types.NamespacedName, addrs []netip.Addr, interfaces []string) {
	next := objectWish{addrs: addrs, interfaces: interfaces}
	o.mu.Lock()
	prev, known := o.wish[svc]
	if !known && len(addrs) == 0 {
		o.mu.Unlock()
		if _, held := o.writer.Held(svc); !held {
			return // no object, none wanted, none on its way
		}
		o.mu.Lock()
	}
	o.wish[svc] = next
	o.mu.Unlock()
	if known && prev.equal(next) {
		return
	}
	o.queue.Add(objectTask{key: svc})
}

// remove queues the deletion of a departed node's object.
func (o *objectSync) remove(obj *v1beta1.ServiceL2Status) {
	key := client.ObjectKeyFromObject(obj)
	o.mu.Lock()
	o.departed[key] = obj
	o.mu.Unlock()
	o.queue.Add(objectTask{key: key, departed: true})
}

// lost is told of every deletion of this node's objects. One deleted by
// someone else while this node still answers for its Service (a node
// that took over while this one was thought dead, or a user) is written
// again.
func (o *objectSync) lost(st *v1beta1.ServiceL2Status) {
	svc, forgotten := o.writer.Lost(st)
	if !forgotten {
		return
	}
	o.mu.Lock()
	w, wanted := o.wish[svc]
	o.mu.Unlock()
	if wanted && len(w.addrs) > 0 {
		o.log.Info("this node's ServiceL2Status was deleted while it answers; writing it again", "service", svc, "object", st.Name)
		o.queue.Add(objectTask{key: svc})
	}
}

// run writes until ctx ends, then lets the writes in progress finish.
func (o *objectSync) run(ctx context.Context) {
	defer close(o.done)
	statusobj.RunWorkers(ctx, o.queue, o.parallelism, o.apply, func(task objectTask, err error) {
		o.log.Error(err, "write a ServiceL2Status; retrying", "object", task.key, "departedNode", task.departed)
	})
}

// stopped is closed once run has returned.
func (o *objectSync) stopped() <-chan struct{} { return o.done }

func (o *objectSync) apply(ctx context.Context, task objectTask) error {
	o.mu.Lock()
	if task.departed {
		obj, ok := o.departed[task.key]
		o.mu.Unlock()
		if !ok {
			return nil
		}
		if node := l2status.NodeOf(obj); o.live(node) {
			o.log.Info("a departed node is back; keeping its ServiceL2Status", "object", task.key, "node", node)
			o.forgetDeparted(task.key, obj)
			return nil
		}
		if err := l2status.DeleteObject(ctx, o.client, obj); err != nil {
			return err
		}
		o.forgetDeparted(task.key, obj)
		return nil
	}
	wish := o.wish[task.key]
	o.mu.Unlock()
	if len(wish.addrs) == 0 {
		if err := o.writer.Release(ctx, task.key); err != nil {
			return err
		}
		o.forgetIfEmpty(task.key)
		return nil
	}
	return o.writer.Report(ctx, task.key, wish.addrs, wish.interfaces)
}

// forgetDeparted drops a departed node's object once it is dealt with,
// unless a newer one was queued meanwhile.
func (o *objectSync) forgetDeparted(key types.NamespacedName, obj *v1beta1.ServiceL2Status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.departed[key] == obj {
		delete(o.departed, key)
	}
}

// forgetIfEmpty drops a wish for no object once it is carried out, so the
// map holds only Services this node answers for.
func (o *objectSync) forgetIfEmpty(svc types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w, ok := o.wish[svc]; ok && len(w.addrs) == 0 {
		delete(o.wish, svc)
	}
}
