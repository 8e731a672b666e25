package statusobj

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// RunWorkers takes keys off queue with parallelism workers and applies
// each, until ctx ends; then it lets the applies in progress finish. A
// key whose apply fails is reported to failed and queued again with
// backoff, unless ctx has ended. It returns once every worker stopped.
func RunWorkers[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K], parallelism int,
	apply func(context.Context, K) error, failed func(K, error)) {
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range parallelism {
		wg.Go(func() {
			for next(ctx, queue, apply, failed) {
			}
		})
	}
	wg.Wait()
}

func next[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K],
	apply func(context.Context, K) error, failed func(K, error)) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	if err := apply(ctx, key); err != nil {
		if ctx.Err() == nil {
			failed(key, err)
			queue.AddRateLimited(key)
		}
		return true
	}
	queue.Forget(key)
	return true
}
