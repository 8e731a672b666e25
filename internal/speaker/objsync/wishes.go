package objsync

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// wishes is the latest wish per Service: what the node's object for it
// should list. An empty wish means no object; it is dropped once carried
// out, so the map holds only Services the node has an object for or is
// about to. It is safe for concurrent use.
type wishes[W any] struct {
	empty func(W) bool
	equal func(a, b W) bool

	mu sync.Mutex
	m  map[types.NamespacedName]W
}

func newWishes[W any](empty func(W) bool, equal func(a, b W) bool) *wishes[W] {
	return &wishes[W]{empty: empty, equal: equal, m: map[types.NamespacedName]W{}}
}

// set records next for svc and reports whether a write must be queued:
// the wish changed. A first wish for no object needs no write, unless
// held says the writer has an object for svc (or one on its way).
func (w *wishes[W]) set(svc types.NamespacedName, next W, held func(types.NamespacedName) bool) bool {
	w.mu.Lock()
	prev, known := w.m[svc]
	if !known && w.empty(next) {
		// held takes the writer's lock: not while holding ours.
		w.mu.Unlock()
		if !held(svc) {
			return false
		}
		w.mu.Lock()
	}
	w.m[svc] = next
	w.mu.Unlock()
	return !known || !w.equal(prev, next)
}

// get returns the wish for svc; none is the empty wish.
func (w *wishes[W]) get(svc types.NamespacedName) W {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[svc]
}

// wanted reports whether svc's object is wanted (its wish is not empty).
func (w *wishes[W]) wanted(svc types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, ok := w.m[svc]
	return ok && !w.empty(cur)
}

// forgetIfEmpty drops a wish for no object once it is carried out,
// unless a newer wish came meanwhile.
func (w *wishes[W]) forgetIfEmpty(svc types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.m[svc]; ok && w.empty(cur) {
		delete(w.m, svc)
	}
}

// newQueue is the writers' queue: failed writes back off from 10 ms to
// 30 s.
func newQueue[K comparable]() workqueue.TypedRateLimitingInterface[K] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[K](
		10*time.Millisecond, 30*time.Second))
}
