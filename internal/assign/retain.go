package assign

import (
	"net/netip"
	"time"

	"github.com/steadylb/steadylb/internal/ipam"
)

// retainedName is the AddressReservation that retains a deleted Service's
// addresses.
func retainedName(service string) string { return "retained-" + service }

// Retain reserves the addresses among addrs that nobody holds now for a
// Service named k, until now+window rounded up to the second, and returns
// the reservation, nil when it keeps nothing. Its AddressReservation is
// still to be written: until the writer reports back (RetentionWritten,
// or ForgetReservation after a failed write), Writing says so.
func (alloc *Allocator) Retain(k ipam.ServiceKey, addrs []netip.Addr, now time.Time, window time.Duration) *Reservation {
	res := &Reservation{object: ipam.ServiceKey{Namespace: k.Namespace, Name: retainedName(k.Name)}, target: k,
		created: now, expires: retainUntil(now, window), retained: true, writing: true}
	for _, a := range addrs {
		if len(alloc.book.Holders(a)) == 0 {
			res.addrs = append(res.addrs, a)
		}
	}
	if len(res.addrs) == 0 || alloc.reserved == nil {
		return nil
	}
	if old := alloc.reserved.put(res); old != nil {
		alloc.releaseStandIn(old)
	}
	if conflicts := alloc.holdReservations([]*Reservation{res}, now); len(conflicts) == len(res.addrs) {
		alloc.reserved.remove(res.object)
		return nil
	}
	return res
}

// retainUntil is the end of a retention window that starts at now. The API
// server keeps spec.expiresAt to the second, so the end is rounded up: a
// window is never shorter than configured.
func retainUntil(now time.Time, window time.Duration) time.Time {
	end := now.Add(window)
	if whole := end.Truncate(time.Second); whole.Before(end) {
		return whole.Add(time.Second)
	}
	return end
}

// RetentionWritten records that the AddressReservation of a retention is
// written: from now on it speaks for the reservation. Its watch event may
// have come while it was being written, and been passed over: the
// reservation is woken once more (TakeWoken), if it is still the one of
// its name.
func (alloc *Allocator) RetentionWritten(res *Reservation) {
	res.writing = false
	if alloc.reserved.byObject[res.object] == res {
		alloc.woken = append(alloc.woken, res.object)
	}
}
