package assign

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/internal/lbclass"
)

// Judge says whether a reservation is bound and, if not, why: the Bound
// condition of its status, and the Service it is bound to ("" for none).
// target is the Service it names, nil when there is none.
func (alloc *Allocator) Judge(res *Reservation, target *corev1.Service, lbClass string) (metav1.Condition, string) {
	cond := metav1.Condition{Type: v1alpha1.ConditionBound, Status: metav1.ConditionFalse}
	if alloc.bound(res) {
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonBound
		cond.Message = fmt.Sprintf("service %s holds %s", res.target.Name, addrList(res.addrs))
		return cond, res.target.Name
	}
	for _, a := range res.addrs {
		holders := alloc.book.Holders(a)
		switch {
		case slices.Contains(holders, res.StandIn()) || slices.Contains(holders, res.target):
			continue
		case len(holders) > 0 && isStandIn(holders[0]):
			cond.Reason = v1alpha1.ReasonAddressReserved
			cond.Message = fmt.Sprintf("%s is kept by an older AddressReservation, %s", a, holders[0].Name[len(standInPrefix):])
		case len(holders) > 0:
			cond.Reason = v1alpha1.ReasonAddressInUse
			cond.Message = fmt.Sprintf("%s is held by service %s; the reservation takes effect when it lets go, and never moves it",
				a, holders[0])
		default:
			if _, ok := alloc.book.PoolOf(a); !ok {
				cond.Reason, cond.Message = v1alpha1.ReasonNotInPool, fmt.Sprintf("%s is in no IPAddressPool", a)
			} else {
				cond.Reason, cond.Message = v1alpha1.ReasonAddressInUse, fmt.Sprintf("%s is being given up by a service", a)
			}
		}
		return cond, ""
	}
	switch {
	case target == nil:
		cond.Reason = v1alpha1.ReasonWaitingForService
		cond.Message = fmt.Sprintf("keeping %s for service %s, which does not exist yet", addrList(res.addrs), res.target.Name)
	case !lbclass.Owns(target, lbClass):
		cond.Reason = v1alpha1.ReasonWaitingForService
		cond.Message = fmt.Sprintf("keeping %s for service %s, which is not a LoadBalancer this controller serves", addrList(res.addrs), res.target.Name)
	case ShowsAddress(target):
		cond.Reason = v1alpha1.ReasonNotUsable
		cond.Message = fmt.Sprintf("service %s holds %s and keeps them; the reservation waits", res.target.Name, addrList(StatusAddresses(target)))
	default:
		cond.Reason = v1alpha1.ReasonWaitingForService
		cond.Message = fmt.Sprintf("keeping %s for service %s; see its events if it does not take them", addrList(res.addrs), res.target.Name)
	}
	return cond, ""
}

// ReservationNamed returns the reservation of an AddressReservation's
// namespace and name, nil if there is none.
func (alloc *Allocator) ReservationNamed(object ipam.ServiceKey) *Reservation {
	return alloc.reserved.byObject[object]
}

// ReservationsOf names the AddressReservations that keep addresses for a
// Service, oldest first.
func (alloc *Allocator) ReservationsOf(svc ipam.ServiceKey) []ipam.ServiceKey {
	if alloc.reserved == nil {
		return nil
	}
	var out []ipam.ServiceKey
	for _, r := range alloc.reserved.byService[svc] {
		out = append(out, r.object)
	}
	return out
}

// PutReservation takes in a reservation as its AddressReservation reads
// now, in place of the one of that name, and has its stand-in hold its
// addresses unless it has expired at now. When the addresses changed, what
// the old stand-in held is freed first; PutReservation reports whether
// anything was, so that the Services waiting for room are judged again.
func (alloc *Allocator) PutReservation(res *Reservation, now time.Time) (freed bool) {
	if old := alloc.reserved.put(res); old != nil && !slices.Equal(old.addrs, res.addrs) {
		if gone, ok := alloc.releaseStandIn(old); ok {
			alloc.Freed(gone.Addrs)
			freed = true
		}
	}
	alloc.holdReservations([]*Reservation{res}, now)
	return freed
}

// ForgetReservation drops a reservation, unless another one of its name
// has replaced it meanwhile, and frees what its stand-in held. It reports
// whether anything was freed, so that the Services waiting for room are
// judged again.
func (alloc *Allocator) ForgetReservation(res *Reservation) (freed bool) {
	if alloc.reserved.byObject[res.object] != res {
		return false
	}
	alloc.reserved.remove(res.object)
	gone, ok := alloc.releaseStandIn(res)
	if ok {
		alloc.Freed(gone.Addrs)
	}
	return ok
}
