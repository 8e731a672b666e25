package assign

import (
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/internal/ipam"
)

// ReservationVerdict is one AddressReservation as the replayed book holds
// it, and the Bound condition the controller gives it.
type ReservationVerdict struct {
	// Object is the AddressReservation's namespace and name.
	Object ipam.ServiceKey
	// Service is the name, in the same namespace, it keeps addresses for.
	Service string
	// Addrs are the addresses it names; Held those its stand-in holds now
	// (not yet taken by the Service, and not held by anyone else), in
	// Pool.
	Addrs, Held []netip.Addr
	Pool        string
	// Retained: the controller made it for a deleted Service.
	Retained bool
	Created  time.Time
	// Expires is zero for a reservation without expiresAt.
	Expires time.Time
	Expired bool
	// Condition is the Bound condition the controller writes in its
	// status, with the reason it is not bound.
	Condition metav1.Condition
}

// ReservationHolder reports whether a holder the book names is the
// stand-in of an AddressReservation, and which (namespace and name).
func ReservationHolder(k ipam.ServiceKey) (ipam.ServiceKey, bool) {
	if !isStandIn(k) {
		return ipam.ServiceKey{}, false
	}
	return ipam.ServiceKey{Namespace: k.Namespace, Name: strings.TrimPrefix(k.Name, standInPrefix)}, true
}

// replayedReservations describes every reservation once the barrier has
// decided every Service, judged as the reservation reconciler judges it.
func replayedReservations(alloc *Allocator, services []corev1.Service, lbClass string, now time.Time) []ReservationVerdict {
	all := alloc.reserved.all()
	// Indexed by the few Services reservations name, not by every Service.
	byKey := make(map[ipam.ServiceKey]*corev1.Service, len(all))
	for _, r := range all {
		byKey[r.target] = nil
	}
	for i := range services {
		if _, ok := byKey[Key(&services[i])]; ok {
			byKey[Key(&services[i])] = &services[i]
		}
	}
	var out []ReservationVerdict
	for _, r := range all {
		held, _ := alloc.book.Assigned(r.StandIn())
		cond, _ := alloc.Judge(r, byKey[r.target], lbClass)
		out = append(out, ReservationVerdict{Object: r.object, Service: r.target.Name, Addrs: r.addrs, Held: held.Addrs,
			Pool: held.Pool, Retained: r.retained, Created: r.created, Expires: r.expires, Expired: r.Expired(now),
			Condition: cond})
	}
	return out
}
