package objsync

import (
	"context"
	"net/netip"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/internal/speaker/statusobj"
)

// L2 writes this node's ServiceL2Status objects, and deletes the departed
// nodes' ones, in the background. A round that must stop answering, say
// because the previous owner is back, is never stuck behind the writes of
// the one before, and an object for an address this node stopped
// answering meanwhile is never written.
type L2 struct {
	writer      *l2status.Writer
	client      client.Client
	log         logr.Logger
	parallelism int
	queue       workqueue.TypedRateLimitingInterface[l2Task]
	// live reports whether a node is a live member now: a departed node's
	// objects are left alone once it is back (a node declared dead by
	// mistake that refuted it still answers, and its objects say so).
	live func(node string) bool
	// wish is what this node's object for each Service should list; no
	// addresses means no object.
	wish *wishes[l2Wish]

	mu sync.Mutex
	// departed are other nodes' objects to delete, by object key.
	departed map[types.NamespacedName]*v1beta1.ServiceL2Status
	// done is closed once every worker has stopped.
	done chan struct{}
}

// l2Task is one object to bring in line: this node's object for a
// Service, or a departed node's object.
type l2Task struct {
	key      types.NamespacedName
	departed bool
}

type l2Wish struct {
	addrs      []netip.Addr
	interfaces []string
}

func (w l2Wish) equal(o l2Wish) bool {
	return slices.Equal(w.addrs, o.addrs) && slices.Equal(w.interfaces, o.interfaces)
}

func (w l2Wish) empty() bool { return len(w.addrs) == 0 }

// NewL2 returns an L2 writing through w (and deleting departed nodes'
// objects with c) with parallelism workers once Run is called; live
// reports whether a node is a live member now.
func NewL2(w *l2status.Writer, c client.Client, log logr.Logger, parallelism int, live func(string) bool) *L2 {
	return &L2{
		writer: w, client: c, log: log, parallelism: parallelism, live: live,
		queue:    newQueue[l2Task](),
		wish:     newWishes(l2Wish.empty, l2Wish.equal),
		departed: map[types.NamespacedName]*v1beta1.ServiceL2Status{},
		done:     make(chan struct{}),
	}
}

// Want records what this node's object for svc should list, and queues a
// write when that changed. addrs and interfaces must be sorted.
func (o *L2) Want(svc types.NamespacedName, addrs []netip.Addr, interfaces []string) {
	held := func(svc types.NamespacedName) bool { _, ok := o.writer.Held(svc); return ok }
	if o.wish.set(svc, l2Wish{addrs: addrs, interfaces: interfaces}, held) {
		o.queue.Add(l2Task{key: svc})
	}
}

// Remove queues the deletion of a departed node's object.
func (o *L2) Remove(obj *v1beta1.ServiceL2Status) {
	key := client.ObjectKeyFromObject(obj)
	o.mu.Lock()
	o.departed[key] = obj
	o.mu.Unlock()
	o.queue.Add(l2Task{key: key, departed: true})
}

// Lost is told of every deletion of this node's objects. One deleted by
// someone else while this node still answers for its Service (a node
// that took over while this one was thought dead, or a user) is written
// again.
func (o *L2) Lost(st *v1beta1.ServiceL2Status) {
	if svc, forgotten := o.writer.Lost(st); forgotten && o.wish.wanted(svc) {
		o.log.Info("this node's ServiceL2Status was deleted while it answers; writing it again", "service", svc, "object", st.Name)
		o.queue.Add(l2Task{key: svc})
	}
}

// Run writes until ctx ends, then lets the writes in progress finish.
func (o *L2) Run(ctx context.Context) {
	defer close(o.done)
	statusobj.RunWorkers(ctx, o.queue, o.parallelism, o.apply, func(task l2Task, err error) {
		o.log.Error(err, "write a ServiceL2Status; retrying", "object", task.key, "departedNode", task.departed)
	})
}

// Stopped is closed once Run has returned.
func (o *L2) Stopped() <-chan struct{} { return o.done }

func (o *L2) apply(ctx context.Context, task l2Task) error {
	if task.departed {
		return o.applyDeparted(ctx, task.key)
	}
	wish := o.wish.get(task.key)
	if wish.empty() {
		if err := o.writer.Release(ctx, task.key); err != nil {
			return err
		}
		o.wish.forgetIfEmpty(task.key)
		return nil
	}
	return o.writer.Report(ctx, task.key, wish.addrs, wish.interfaces)
}

// applyDeparted deletes a departed node's object, unless the node is back.
func (o *L2) applyDeparted(ctx context.Context, key types.NamespacedName) error {
	o.mu.Lock()
	obj, ok := o.departed[key]
	o.mu.Unlock()
	if !ok {
		return nil
	}
	if node := l2status.NodeOf(obj); o.live(node) {
		// One line per object: a thousand when a node with a thousand
		// addresses comes back, so only at debug level.
		o.log.V(1).Info("a departed node is back; keeping its ServiceL2Status", "object", key, "node", node)
		o.forgetDeparted(key, obj)
		return nil
	}
	if err := l2status.DeleteObject(ctx, o.client, obj); err != nil {
		return err
	}
	o.forgetDeparted(key, obj)
	return nil
}

// forgetDeparted drops a departed node's object once it is dealt with,
// unless a newer one was queued meanwhile.
func (o *L2) forgetDeparted(key types.NamespacedName, obj *v1beta1.ServiceL2Status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.departed[key] == obj {
		delete(o.departed, key)
	}
}
