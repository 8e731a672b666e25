package assign

import (
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/steadylb/steadylb/internal/ipam"
)

// EventRecordIgnored is the Warning event for an allocation record that
// names addresses the Service cannot have back.
const EventRecordIgnored = "AllocationRecordIgnored"

// recalled returns the addresses a Service's allocation record names when
// they are what the Service should get back: it shows no address, the
// book holds none for it, it requests none itself, and the record is
// valid. That is a Service whose status was lost while its metadata was
// kept: recreated by `kubectl replace --force` or a Helm or Argo CD
// replace, or restored from a backup, which drops status. Only the
// families the Service still wants are recalled.
func recalled(svc *corev1.Service, req ipam.Request, holds bool) []netip.Addr {
	if holds || len(req.RequestedIPs) > 0 || ShowsAddress(svc) {
		return nil
	}
	value, ok := svc.Annotations[AnnotationAllocation]
	if !ok {
		return nil
	}
	t, err := ParseRecord(value)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range t.addrs {
		if req.Policy != ipam.SingleStack || ipam.FamilyOf(a) == req.Primary {
			out = append(out, a)
		}
	}
	return out
}

// hasRecall reports whether a Service would be given its recorded
// addresses back, for the startup order.
func hasRecall(svc *corev1.Service) bool {
	parsed, err := parseService(svc)
	return err == nil && len(recalled(svc, parsed.Request, false)) > 0
}

// Origin says where a Service's addresses came back from, when they were
// kept for it rather than taken fresh from a pool.
type Origin struct {
	// Reservation is the AddressReservation that kept them ("" = none).
	Reservation string
	// Record is true when the allocation record named them.
	Record bool
}

// phrase is the IPAllocated event's suffix.
func (o Origin) phrase() string {
	switch {
	case o.Reservation != "":
		return fmt.Sprintf(" (kept for it by AddressReservation %s)", o.Reservation)
	case o.Record:
		return " (restored from " + AnnotationAllocation + ")"
	}
	return ""
}

// reclaim gives a Service that holds nothing and requests nothing the
// addresses that were kept for it: first those an AddressReservation
// keeps, then those its allocation record names. The origin says which,
// for the IPAllocated event and the plugin; the condition reads the same
// either way, so the next reconcile has nothing to rewrite. The caller
// holds alloc.mu.
func reclaim(alloc *Allocator, svc *corev1.Service, req ipam.Request, holds bool) (ipam.Assignment, Origin, []Event) {
	if holds || len(req.RequestedIPs) > 0 || ShowsAddress(svc) {
		return ipam.Assignment{}, Origin{}, nil
	}
	var notes []Event
	if alloc.reserved != nil {
		for _, r := range alloc.reserved.byService[Key(svc)] {
			a, err := alloc.takeReservation(r, req)
			if err == nil {
				return a, Origin{Reservation: r.object.Name}, nil
			}
			if errors.Is(err, errNothingHeld) {
				continue // its status says who holds the addresses
			}
			notes = append(notes, Event{true, EventReservationNotUsable,
				fmt.Sprintf("AddressReservation %s keeps %s for this service, but they cannot be given to it (%s): %v",
					r.object.Name, addrList(r.addrs), reasonFor(err), err)})
		}
	}
	if addrs := recalled(svc, req, holds); len(addrs) > 0 {
		a, ignored := recall(alloc, req, addrs)
		if ignored != nil {
			return a, Origin{}, append(notes, *ignored)
		}
		return a, Origin{Record: true}, notes
	}
	return ipam.Assignment{}, Origin{}, notes
}

// recall gives a Service the addresses its record names, if they are free
// (or shareable) and still allowed for it. When they are not, the record
// is ignored: the Service is served as if it had none, and an event and
// the condition's message say why. The caller holds alloc.mu.
func recall(alloc *Allocator, req ipam.Request, addrs []netip.Addr) (ipam.Assignment, *Event) {
	want := req
	want.RequestedIPs = addrs
	if _, err := alloc.book.Allocate(want); err != nil {
		return ipam.Assignment{}, &Event{true, EventRecordIgnored,
			fmt.Sprintf("the addresses %s recorded in %s are not given back (%s): %v", addrList(addrs), AnnotationAllocation, reasonFor(err), err)}
	}
	// Held under the Service's own request from now on, which keeps them
	// (the keep path): a later change is judged like any other.
	a, err := alloc.book.Allocate(req)
	if err != nil {
		a = alloc.book.Retain(req)
	}
	return a, nil
}
