package inspect

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// origin says where the Service's addresses came back from: in this
// decision (the Service showed none), or by a reservation it holds them
// by. An address restored from the record earlier looks like any other
// once it shows in status.
func (s *State) origin(v assign.Verdict) string {
	switch {
	case v.Origin.Reservation != "":
		return fmt.Sprintf("kept for it by AddressReservation %s/%s", v.Service.Namespace, v.Origin.Reservation)
	case v.Origin.Record:
		return "given back from its allocation record (" + assign.AnnotationAllocation + ")"
	}
	for _, a := range v.Addrs {
		if b := s.boundBy(v.Service, a); b != nil {
			return "kept for it by AddressReservation " + b.Name
		}
	}
	return ""
}

// reservationsFor describes every AddressReservation that names the
// Service: bound, or why not, in the words of the status the controller
// writes, and what in the Service's request keeps it from the addresses.
func (s *State) reservationsFor(v assign.Verdict) []string {
	var out []string
	for _, r := range s.Replayed.Reservations {
		if r.Object.Namespace != v.Service.Namespace || r.Service != v.Service.Name {
			continue
		}
		line := fmt.Sprintf("%s keeps %s: ", r.Object.Name, strings.Join(addrStrings(r.Addrs), ","))
		switch {
		case r.Expired:
			line += fmt.Sprintf("expired at %s; the controller deletes it", r.Expires.UTC().Format("2006-01-02T15:04:05Z"))
		case r.Condition.Status == "True":
			line += "bound, the Service holds them"
		case notUsableEvent(v, r.Object.Name) != "":
			line += "not usable: " + notUsableEvent(v, r.Object.Name)
		default:
			line += fmt.Sprintf("not bound (%s): %s", r.Condition.Reason, r.Condition.Message)
			if why := unusable(v, r); why != "" {
				line += "; " + why
			}
		}
		out = append(out, line)
	}
	return out
}

// notUsableEvent is the controller's ReservationNotUsable note about a
// reservation in this decision, if any.
func notUsableEvent(v assign.Verdict, name string) string {
	for _, ev := range v.Events {
		if ev.Reason == assign.EventReservationNotUsable && strings.HasPrefix(ev.Note, "AddressReservation "+name+" ") {
			return ev.Note
		}
	}
	return ""
}

// unusable says what in the Service keeps it from the addresses a
// reservation holds for it, as far as the request tells: the controller
// hands them over only to a Service that holds and requests nothing, and
// only under the Service's own request.
func unusable(v assign.Verdict, r assign.ReservationVerdict) string {
	req := v.Request()
	switch {
	case len(r.Held) == 0:
		return ""
	case len(req.RequestedIPs) > 0:
		return "it requests addresses itself: a reservation is taken only by a Service that requests none"
	case req.Pool != "" && req.Pool != r.Pool:
		return fmt.Sprintf("it asks for pool %q, the reserved addresses are in pool %q", req.Pool, r.Pool)
	case !slices.Contains(req.EligiblePools, r.Pool):
		return fmt.Sprintf("the serviceAllocation of pool %q, which the reserved addresses are in, does not admit it", r.Pool)
	case req.Policy == ipam.SingleStack && !slices.ContainsFunc(r.Held, func(a netip.Addr) bool { return ipam.FamilyOf(a) == req.Primary }):
		return fmt.Sprintf("it wants only %s, the reservation holds %s", req.Primary, strings.Join(addrStrings(r.Held), ","))
	}
	return ""
}

// holderNames names the holders of an address: Services, and the
// AddressReservations whose stand-ins the book holds it for.
func holderNames(holders []ipam.ServiceKey) string {
	names := make([]string, 0, len(holders))
	for _, k := range holders {
		if res, ok := assign.ReservationHolder(k); ok {
			names = append(names, "AddressReservation "+res.String())
		} else {
			names = append(names, k.String())
		}
	}
	return strings.Join(names, ",")
}

// takenBy says who takes a full pool family's addresses: Services, and
// which reservations.
func (s *State) takenBy(pool string, f ipam.Family, fs ipam.FamilyStats) string {
	var names []string
	n := 0
	for _, r := range s.Replayed.Reservations {
		if r.Pool != pool {
			continue
		}
		if c := countFamily(r.Held, f); c > 0 {
			n += c
			names = append(names, r.Object.String())
		}
	}
	if n == 0 {
		return fmt.Sprintf("all %s assigned", fs.Total)
	}
	return fmt.Sprintf("%s: %s assigned, %d reserved by AddressReservation %s", fs.Total, minus(fs.Assigned, n), n,
		strings.Join(names, ","))
}

func countFamily(addrs []netip.Addr, f ipam.Family) int {
	n := 0
	for _, a := range addrs {
		if ipam.FamilyOf(a) == f {
			n++
		}
	}
	return n
}
