package speaker

import (
	"net/netip"
	"slices"
	"time"
)

// A handover between two live nodes is safe one way: the old owner stops,
// then deletes its ServiceL2Status, and the new owner starts once the
// object is gone. The new owner's own object is written in the
// background, after it starts. So when ownership moves back before that
// object is visible (Local endpoints flapping A->B->A faster than an API
// write), the old owner sees nothing guarding the address and would start
// while the new one, which has not processed the change yet, still
// answers. Hence the hold: a node that stopped answering an address
// because another live node became its owner does not take it back until
// it has seen that node's object for the address (the ordinary guard then
// makes it wait for the deletion), that node has left, or StartGrace has
// passed, the time the new owner's object is given to appear.

// handoff is an address this node stopped answering because another
// live node became its owner.
type handoff struct {
	to string
	at time.Time
	// seen: to's object for the address was seen since.
	seen bool
}

// noteHandoff records that this node stops answering a for owner, a live
// node other than this one.
func (s *Speaker) noteHandoff(a netip.Addr, owner string) {
	if s.opts.StartGrace <= 0 || owner == "" || owner == s.opts.NodeName {
		return
	}
	s.handoffs[a] = handoff{to: owner, at: time.Now()}
}

// handoffHold reports whether this node, elected for a and no longer
// blocked by any object (blocking lists the live nodes whose objects guard
// a), must still hold back, and until when.
func (s *Speaker) handoffHold(a netip.Addr, blocking []string) (time.Time, bool) {
	h, ok := s.handoffs[a]
	if !ok {
		return time.Time{}, false
	}
	if slices.Contains(blocking, h.to) {
		h.seen = true
		s.handoffs[a] = h
		return time.Time{}, false
	}
	until := h.at.Add(s.opts.StartGrace)
	if h.seen || !s.isLive(h.to) || !time.Now().Before(until) {
		delete(s.handoffs, a)
		return time.Time{}, false
	}
	return until, true
}

// pruneHandoffs forgets the holds that have run out.
func (s *Speaker) pruneHandoffs() {
	now := time.Now()
	for a, h := range s.handoffs {
		if !now.Before(h.at.Add(s.opts.StartGrace)) {
			delete(s.handoffs, a)
		}
	}
}
