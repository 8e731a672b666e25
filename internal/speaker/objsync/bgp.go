package objsync

import (
	"context"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/bgpstatus"
	"github.com/steadylb/steadylb/internal/speaker/statusobj"
)

// BGP writes this node's ServiceBGPStatus objects in the background: a
// round says which peers each object should list and never waits for the
// API server.
type BGP struct {
	writer      *bgpstatus.Writer
	log         logr.Logger
	parallelism int
	queue       workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// wish is the peers each Service's object should list; none means no
	// object.
	wish *wishes[[]string]
	done chan struct{}
}

// NewBGP returns a BGP writing through w with parallelism workers once
// Run is called.
func NewBGP(w *bgpstatus.Writer, log logr.Logger, parallelism int) *BGP {
	return &BGP{writer: w, log: log, parallelism: parallelism,
		queue: newQueue[types.NamespacedName](),
		wish:  newWishes(func(p []string) bool { return len(p) == 0 }, slices.Equal[[]string]),
		done:  make(chan struct{})}
}

// Want records the peers svc's object should list (sorted; none: no
// object) and queues a write when that changed. A nil receiver (BGP off)
// does nothing.
func (o *BGP) Want(svc types.NamespacedName, peers []string) {
	if o == nil {
		return
	}
	if o.wish.set(svc, peers, o.writer.Held) {
		o.queue.Add(svc)
	}
}

// Lost is told of every deletion of this node's objects; one deleted by
// someone else while still wanted is written again.
func (o *BGP) Lost(st *v1beta1.ServiceBGPStatus) {
	if svc, forgotten := o.writer.Lost(st); forgotten && o.wish.wanted(svc) {
		o.log.Info("this node's ServiceBGPStatus was deleted while it advertises; writing it again", "service", svc, "object", st.Name)
		o.queue.Add(svc)
	}
}

// Run writes until ctx ends, then lets the writes in progress finish.
func (o *BGP) Run(ctx context.Context) {
	defer close(o.done)
	statusobj.RunWorkers(ctx, o.queue, o.parallelism, o.apply, func(svc types.NamespacedName, err error) {
		o.log.Error(err, "write a ServiceBGPStatus; retrying", "service", svc)
	})
}

// Stopped is closed once Run has returned.
func (o *BGP) Stopped() <-chan struct{} { return o.done }

// apply brings one Service's object in line with the latest wish.
func (o *BGP) apply(ctx context.Context, svc types.NamespacedName) error {
	if peers := o.wish.get(svc); len(peers) > 0 {
		return o.writer.Report(ctx, svc, peers)
	}
	if err := o.writer.Release(ctx, svc); err != nil {
		return err
	}
	o.wish.forgetIfEmpty(svc)
	return nil
}
