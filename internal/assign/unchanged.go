package assign

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// keptChunk is how many kept Services keptUnchanged splits between its two
// goroutines at a time: the second half's decisions wait in a buffer,
// reused from chunk to chunk, until the first half's are taken.
const keptChunk = 4096

// keptUnchanged decides the kept Services (the first serving step, oldest
// first) as alloc would but changing nothing, up to the first whose
// decision would change the book, and hands each decision of that run to
// taken, in order, on the caller's goroutine. It returns how many it
// decided; the replay takes the rest in order, from the book as it found
// it.
//
// Decisions that change nothing commute: each of the run sees the book
// the replay started from, as it would had the ones before it been taken
// one by one, so the run is decided in two halves at once, on two
// goroutines. Most Services of a settled cluster keep exactly what they
// hold, and for the plugin the replay's decisions are most of what it
// does after its LIST, on one core while the other waits.
func keptUnchanged(alloc *Allocator, kept []*corev1.Service, nsLabels func(string) (labels.Set, error),
	taken func(*Verdict)) int {
	d := &unchangedDecider{
		alloc: &Allocator{book: alloc.book, cfg: alloc.cfg, reserved: alloc.reserved, readOnly: alloc.readOnly,
			read: alloc.read, unchangedOnly: true},
		nsLabels: nsLabels,
		second:   make([]Verdict, 0, (min(len(kept), keptChunk)+1)/2),
	}
	for start := 0; start < len(kept); start += keptChunk {
		part := kept[start:min(start+keptChunk, len(kept))]
		if n := d.halves(part, taken); n < len(part) {
			return start + n
		}
	}
	return len(kept)
}

// unchangedDecider decides with an unchangedOnly allocator.
type unchangedDecider struct {
	alloc    *Allocator
	nsLabels func(string) (labels.Set, error)
	second   []Verdict // the second half's decisions
}

// halves decides part's first half on the caller's goroutine and its
// second half on another, and hands the decisions of part's leading
// unchanged run to taken, in order. It returns the run's length.
func (d *unchangedDecider) halves(part []*corev1.Service, taken func(*Verdict)) int {
	half := len(part) / 2
	var (
		stop atomic.Bool // the first half has met a change: the second's run counts for nothing
		wg   sync.WaitGroup
	)
	d.second = d.second[:0]
	wg.Go(func() {
		for _, svc := range part[half:] {
			if stop.Load() {
				return
			}
			d.second = append(d.second, Verdict{})
			if !d.decide(&d.second[len(d.second)-1], svc) {
				d.second = d.second[:len(d.second)-1]
				return
			}
		}
	})
	var v Verdict
	for i, svc := range part[:half] {
		v = Verdict{}
		if !d.decide(&v, svc) {
			stop.Store(true)
			wg.Wait()
			return i
		}
		taken(&v)
	}
	wg.Wait()
	for i := range d.second {
		taken(&d.second[i])
	}
	return half + len(d.second)
}

// decide decides one kept Service into v, which is zero; false when the
// decision would change the book.
func (d *unchangedDecider) decide(v *Verdict, svc *corev1.Service) bool {
	labels, _ := d.nsLabels(svc.Namespace)
	return verdictOf(v, d.alloc, svc, labels, DeciderFor(StepKept))
}
