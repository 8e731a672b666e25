package assign

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// keptUnchanged decides the kept Services (the first serving step, oldest
// first) as alloc would but changing nothing, up to the first whose decision
// would change the book, and hands each decision of that run to taken, in
// order. It returns how many it decided; the replay takes the rest in
// order, from the book as it found it.
//
// Decisions that change nothing commute: each of the run sees the book
// the replay started from, as it would had the ones before it been taken
// one by one, so the run is decided in two halves at once, on two
// goroutines. Most Services of a settled cluster keep exactly what they
// hold, and for the plugin the replay's decisions are most of what it
// does after its LIST, on one core while the other waits.
func keptUnchanged(alloc *Allocator, kept []*corev1.Service, nsLabels func(string) (labels.Set, error),
	taken func(*Verdict)) int {
	unchanged := &Allocator{book: alloc.book, cfg: alloc.cfg, reserved: alloc.reserved, readOnly: alloc.readOnly,
		read: alloc.read, unchangedOnly: true}
	half := len(kept) / 2
	var (
		stop   atomic.Bool // the first half has met a change: the second's run counts for nothing
		second = make([]Verdict, 0, len(kept)-half)
		wg     sync.WaitGroup
	)
	wg.Go(func() {
		for _, svc := range kept[half:] {
			if stop.Load() {
				return
			}
			second = append(second, Verdict{})
			if !decideUnchanged(&second[len(second)-1], unchanged, svc, nsLabels) {
				second = second[:len(second)-1]
				return
			}
		}
	})
	var v Verdict
	for i, svc := range kept[:half] {
		v = Verdict{}
		if !decideUnchanged(&v, unchanged, svc, nsLabels) {
			stop.Store(true)
			wg.Wait()
			return i
		}
		taken(&v)
	}
	wg.Wait()
	for i := range second {
		taken(&second[i])
	}
	return half + len(second)
}

// decideUnchanged decides one kept Service into v, which is zero; false
// when the decision would change the book.
func decideUnchanged(v *Verdict, unchanged *Allocator, svc *corev1.Service, nsLabels func(string) (labels.Set, error)) bool {
	labels, _ := nsLabels(svc.Namespace)
	return verdictOf(v, unchanged, svc, labels, DeciderFor(StepKept))
}
