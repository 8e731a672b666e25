package speaker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/bgpstatus"
	"github.com/steadylb/steadylb/internal/speaker/statusobj"
)

// bgpObjects writes this node's ServiceBGPStatus objects in the
// background, as objectSync does for ServiceL2Status: a round says which
// peers each object should list and never waits for the API server; each
// object is written from the latest wish when its turn comes, so a burst
// of changes to one Service costs one write, and failed writes are
// retried with backoff.
type bgpObjects struct {
	writer      *bgpstatus.Writer
	log         logr.Logger
	parallelism int
	queue       workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu sync.Mutex
	// wish is the peers each Service's object should list; none means no
	// object.
	wish map[types.NamespacedName][]string
	done chan struct{}
}

func newBGPObjects(w *bgpstatus.Writer, log logr.Logger, parallelism int) *bgpObjects {
	return &bgpObjects{writer: w, log: log, parallelism: parallelism,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](
			10*time.Millisecond, 30*time.Second)),
		wish: map[types.NamespacedName][]string{}, done: make(chan struct{})}
}

// want records the peers svc's object should list (sorted; none: no
// object) and queues a write when that changed. A nil receiver (BGP off)
// does nothing.
func (o *bgpObjects) want(svc types.NamespacedName, peers []string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	prev, known := o.wish[svc]
	if !known && len(peers) == 0 && !o.writer.Held(svc) {
		o.mu.Unlock()
		return
	}
	o.wish[svc] = peers
	o.mu.Unlock()
	if known && slices.Equal(prev, peers) {
		return
	}
	o.queue.Add(svc)
}

// lost is told of every deletion of this node's objects; one deleted by
// someone else while still wanted is written again.
func (o *bgpObjects) lost(st *v1beta1.ServiceBGPStatus) {
	svc, forgotten := o.writer.Lost(st)
	if !forgotten {
		return
	}
	o.mu.Lock()
	peers := o.wish[svc]
	o.mu.Unlock()
	if len(peers) > 0 {
		o.log.Info("this node's ServiceBGPStatus was deleted while it advertises; writing it again", "service", svc, "object", st.Name)
		o.queue.Add(svc)
	}
}

// run writes until ctx ends, then lets the writes in progress finish.
func (o *bgpObjects) run(ctx context.Context) {
	defer close(o.done)
	statusobj.RunWorkers(ctx, o.queue, o.parallelism, o.apply, func(svc types.NamespacedName, err error) {
		o.log.Error(err, "write a ServiceBGPStatus; retrying", "service", svc)
	})
}

// apply brings one Service's object in line with the latest wish.
func (o *bgpObjects) apply(ctx context.Context, svc types.NamespacedName) error {
	o.mu.Lock()
	peers := o.wish[svc]
	o.mu.Unlock()
	if len(peers) > 0 {
		return o.writer.Report(ctx, svc, peers)
	}
	if err := o.writer.Release(ctx, svc); err != nil {
		return err
	}
	// Forget a wish for no object once carried out, so the map holds
	// only Services this node advertises.
	o.mu.Lock()
	if len(o.wish[svc]) == 0 {
		delete(o.wish, svc)
	}
	o.mu.Unlock()
	return nil
}
