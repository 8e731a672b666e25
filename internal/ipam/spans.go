package ipam

import "github.com/google/btree"

// span is a closed interval [lo, hi] of free usable indexes.
type span struct{ lo, hi u128 }

func spanLess(a, b span) bool { return a.lo.less(b.lo) }

// spanSet is the set of free indexes of one range, kept as disjoint,
// non-adjacent spans ordered by their low end. A fresh range is one span;
// every take splits at most one span and every put merges at most two, so
// the tree holds (number of holes + 1) spans whatever the range's size.
//
// All operations are O(log s), s = number of spans. n is the number of
// free indexes, kept incrementally.
type spanSet struct {
	t *btree.BTreeG[span]
	n u128
}

// btreeDegree is a middle-of-the-road fan-out: nodes of 2*16-1 spans are
// a few cache lines; the tree stays shallow at 10^6 spans.
const btreeDegree = 16

func newSpanSet(lo, hi u128, empty bool) *spanSet {
	s := &spanSet{t: btree.NewG(btreeDegree, spanLess)}
	if !empty {
		s.t.ReplaceOrInsert(span{lo, hi})
		s.n = spanLen(lo, hi)
	}
	return s
}

// min returns the lowest free index. O(log s).
func (s *spanSet) min() (u128, bool) {
	sp, ok := s.t.Min()
	return sp.lo, ok
}

// containing returns the span holding x, if any. O(log s).
func (s *spanSet) containing(x u128) (span, bool) {
	var got span
	var ok bool
	s.t.DescendLessOrEqual(span{lo: x}, func(sp span) bool {
		got, ok = sp, !sp.hi.less(x)
		return false
	})
	return got, ok
}

// contains reports whether x is free. O(log s).
func (s *spanSet) contains(x u128) bool {
	_, ok := s.containing(x)
	return ok
}

// take marks x as used; it reports false if x was not free. O(log s).
func (s *spanSet) take(x u128) bool {
	sp, ok := s.containing(x)
	if !ok {
		return false
	}
	if sp.lo.less(x) {
		// Same low end: replaces sp in place.
		s.t.ReplaceOrInsert(span{sp.lo, x.subOne()})
	} else {
		s.t.Delete(sp)
	}
	if x.less(sp.hi) {
		s.t.ReplaceOrInsert(span{x.addOne(), sp.hi})
	}
	s.n = s.n.subOne()
	return true
}

// put marks x as free again, merging with its neighbours; it reports false
// if x was already free. O(log s).
func (s *spanSet) put(x u128) bool {
	var prev, next span
	var hasPrev, hasNext bool
	s.t.DescendLessOrEqual(span{lo: x}, func(sp span) bool {
		prev, hasPrev = sp, true
		return false
	})
	if hasPrev && !prev.hi.less(x) {
		return false
	}
	if x != u128Max {
		s.t.AscendGreaterOrEqual(span{lo: x.addOne()}, func(sp span) bool {
			next, hasNext = sp, true
			return false
		})
	}
	joinPrev := hasPrev && prev.hi.addOne() == x
	joinNext := hasNext && x.addOne() == next.lo
	switch {
	case joinPrev && joinNext:
		s.t.Delete(next)
		s.t.ReplaceOrInsert(span{prev.lo, next.hi})
	case joinPrev:
		s.t.ReplaceOrInsert(span{prev.lo, x})
	case joinNext:
		s.t.Delete(next)
		s.t.ReplaceOrInsert(span{x, next.hi})
	default:
		s.t.ReplaceOrInsert(span{x, x})
	}
	s.n = s.n.addOne()
	return true
}

// spans returns the spans in order (for tests and invariant checks). O(s).
func (s *spanSet) spans() []span {
	out := make([]span, 0, s.t.Len())
	s.t.Ascend(func(sp span) bool {
		out = append(out, sp)
		return true
	})
	return out
}
