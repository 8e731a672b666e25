package assign

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// A Reservation keeps addresses for a Service name (AddressReservation,
// created by a user or by the controller to retain a deleted Service's
// addresses). In the book its addresses are held by a stand-in holder,
// so that nothing else is given them, until the named Service takes them
// over. The stand-in's name contains a character no Service name may
// contain, so it never meets a real Service.
type Reservation struct {
	object   ipam.ServiceKey // the AddressReservation
	target   ipam.ServiceKey // the Service it keeps the addresses for
	addrs    []netip.Addr    // sorted
	created  time.Time
	expires  time.Time // zero: never
	retained bool      // created by the controller for a deleted Service
	// writing: the controller made this one for a deleted Service and
	// its AddressReservation is being written. Until that write returns,
	// what the cache shows (nothing yet, or an older object of the same
	// name) says nothing about it: the writer alone decides its fate
	// (RetentionWritten, or ForgetReservation).
	writing bool
}

const standInPrefix = "reservation:"

// StandIn is the book's holder for a reservation's addresses.
func (r *Reservation) StandIn() ipam.ServiceKey {
	return ipam.ServiceKey{Namespace: r.object.Namespace, Name: standInPrefix + r.object.Name}
}

func isStandIn(k ipam.ServiceKey) bool { return strings.HasPrefix(k.Name, standInPrefix) }

// Expired reports whether the reservation keeps nothing any more at now.
func (r *Reservation) Expired(now time.Time) bool {
	return !r.expires.IsZero() && !now.Before(r.expires)
}

// Object is the AddressReservation's namespace and name.
func (r *Reservation) Object() ipam.ServiceKey { return r.object }

// Target is the Service the reservation keeps its addresses for.
func (r *Reservation) Target() ipam.ServiceKey { return r.target }

// Addrs are the addresses the reservation names, sorted.
func (r *Reservation) Addrs() []netip.Addr { return r.addrs }

// Expires is when the reservation ends; zero for never.
func (r *Reservation) Expires() time.Time { return r.expires }

// Retained reports whether the controller made the reservation for a
// deleted Service.
func (r *Reservation) Retained() bool { return r.retained }

// Writing reports whether the reservation is a retention whose
// AddressReservation is being written (see Retain). The caller holds the
// lock.
func (r *Reservation) Writing() bool { return r.writing }

// ReservationFrom converts an AddressReservation. Addresses the API
// server's validation let through but that do not parse are dropped.
func ReservationFrom(obj *v1alpha1.AddressReservation) *Reservation {
	r := &Reservation{
		object:   ipam.ServiceKey{Namespace: obj.Namespace, Name: obj.Name},
		target:   ipam.ServiceKey{Namespace: obj.Namespace, Name: obj.Spec.ServiceName},
		created:  obj.CreationTimestamp.Time,
		retained: obj.Labels[v1alpha1.LabelRetained] == "true",
	}
	if obj.Spec.ExpiresAt != nil {
		r.expires = obj.Spec.ExpiresAt.Time
	}
	for _, s := range obj.Spec.Addresses {
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			r.addrs = append(r.addrs, a.Unmap())
		}
	}
	slices.SortFunc(r.addrs, netip.Addr.Compare)
	return r
}

func olderReservation(a, b *Reservation) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.object.Namespace, b.object.Namespace), cmp.Compare(a.object.Name, b.object.Name))
}

// reservations indexes the known reservations by object, by the Service
// they are for, and by address. Guarded by Allocator.mu.
type reservations struct {
	byObject  map[ipam.ServiceKey]*Reservation
	byService map[ipam.ServiceKey][]*Reservation // oldest first
	byAddr    map[netip.Addr][]*Reservation      // oldest first
}

func newReservations() *reservations {
	return &reservations{byObject: map[ipam.ServiceKey]*Reservation{},
		byService: map[ipam.ServiceKey][]*Reservation{}, byAddr: map[netip.Addr][]*Reservation{}}
}

// put adds or replaces a reservation and returns the one it replaced.
func (rs *reservations) put(r *Reservation) *Reservation {
	old := rs.remove(r.object)
	rs.byObject[r.object] = r
	rs.byService[r.target] = insertSorted(rs.byService[r.target], r)
	for _, a := range r.addrs {
		rs.byAddr[a] = insertSorted(rs.byAddr[a], r)
	}
	return old
}

func insertSorted(list []*Reservation, r *Reservation) []*Reservation {
	i, _ := slices.BinarySearchFunc(list, r, olderReservation)
	return slices.Insert(list, i, r)
}

// remove drops a reservation and returns it, nil if unknown.
func (rs *reservations) remove(object ipam.ServiceKey) *Reservation {
	r := rs.byObject[object]
	if r == nil {
		return nil
	}
	delete(rs.byObject, object)
	rs.byService[r.target] = dropFrom(rs.byService[r.target], r)
	if len(rs.byService[r.target]) == 0 {
		delete(rs.byService, r.target)
	}
	for _, a := range r.addrs {
		if rs.byAddr[a] = dropFrom(rs.byAddr[a], r); len(rs.byAddr[a]) == 0 {
			delete(rs.byAddr, a)
		}
	}
	return r
}

func dropFrom(list []*Reservation, r *Reservation) []*Reservation {
	return slices.DeleteFunc(list, func(x *Reservation) bool { return x == r })
}

// all returns every reservation, oldest first.
func (rs *reservations) all() []*Reservation {
	out := make([]*Reservation, 0, len(rs.byObject))
	for _, r := range rs.byObject {
		out = append(out, r)
	}
	slices.SortFunc(out, olderReservation)
	return out
}

// RegisterReservations indexes the AddressReservations and registers the
// stand-ins of those not expired at now, after every status claim (step 2
// of the startup barrier). The startup barrier and the read-only Replay
// both call it, so the plugin holds what the controller holds.
func (alloc *Allocator) RegisterReservations(items []v1alpha1.AddressReservation, now time.Time) {
	index := newReservations()
	for i := range items {
		index.put(ReservationFrom(&items[i]))
	}
	alloc.reserved = index
	alloc.holdReservations(index.all(), now)
}

// claim is the book's claim for a reservation's stand-in: every pool may
// keep a reservation, whatever its serviceAllocation says; the Service
// must still be admitted when it takes the addresses over.
func (r *Reservation) claim(poolNames []string) ipam.Claim {
	req := ipam.Request{Service: r.StandIn(), Policy: ipam.SingleStack, EligiblePools: poolNames}
	if len(r.addrs) > 0 {
		req.Primary = ipam.FamilyOf(r.addrs[0])
	}
	if len(r.addrs) > 1 {
		req.Policy = ipam.RequireDualStack
	}
	return ipam.Claim{Request: req, Addrs: r.addrs, Created: r.created}
}

// holdReservations registers the stand-ins of reservations that are not
// expired, whose Service does not hold their addresses, in one Restore
// call: on an address two reservations name, the older wins; an address
// a Service holds stays with it. The caller holds alloc.mu.
func (alloc *Allocator) holdReservations(list []*Reservation, now time.Time) []ipam.Conflict {
	var claims []ipam.Claim
	names := poolNames(alloc.cfg)
	for _, r := range list {
		if r.Expired(now) || alloc.bound(r) {
			continue
		}
		if _, held := alloc.book.Assigned(r.StandIn()); held {
			continue
		}
		claims = append(claims, r.claim(names))
	}
	if len(claims) == 0 {
		return nil
	}
	conflicts := alloc.book.Restore(claims)
	for _, c := range claims {
		if held, _ := alloc.book.Assigned(c.Request.Service); len(held.Addrs) > 0 {
			alloc.reservedChanged = true
			break
		}
	}
	return conflicts
}

// bound reports whether the reservation's Service holds all its addresses.
func (alloc *Allocator) bound(r *Reservation) bool {
	held, _ := alloc.book.Assigned(r.target)
	for _, a := range r.addrs {
		if !slices.Contains(held.Addrs, a) {
			return false
		}
	}
	return len(r.addrs) > 0
}

// Freed gives addresses that just became free back to the reservations
// that name them, before anyone else may take them.
func (alloc *Allocator) Freed(addrs []netip.Addr) {
	if alloc.reserved == nil || len(addrs) == 0 {
		return
	}
	var wanting []*Reservation
	for _, a := range addrs {
		for _, r := range alloc.reserved.byAddr[a] {
			if !slices.Contains(wanting, r) {
				wanting = append(wanting, r)
			}
		}
	}
	slices.SortFunc(wanting, olderReservation)
	alloc.holdReservations(wanting, time.Now())
	for _, r := range wanting {
		alloc.woken = append(alloc.woken, r.object)
	}
}

// TakeWoken returns the reservations freed addresses went to since the
// last call, for a status update.
func (alloc *Allocator) TakeWoken() []ipam.ServiceKey {
	w := alloc.woken
	alloc.woken = nil
	return w
}

// takeReservation hands the addresses a reservation's stand-in holds to
// the Service it names, under the Service's own request, if that request
// allows them. Otherwise the stand-in keeps them and the error says why.
// The caller holds alloc.mu.
func (alloc *Allocator) takeReservation(r *Reservation, req ipam.Request) (ipam.Assignment, error) {
	kept, _ := alloc.book.Assigned(r.StandIn())
	var addrs []netip.Addr
	for _, x := range kept.Addrs {
		if req.Policy != ipam.SingleStack || ipam.FamilyOf(x) == req.Primary {
			addrs = append(addrs, x)
		}
	}
	if len(addrs) == 0 {
		return ipam.Assignment{}, errNothingHeld
	}
	alloc.releaseStandIn(r)
	want := req
	want.RequestedIPs = addrs
	if _, err := alloc.book.Allocate(want); err != nil {
		alloc.book.Restore([]ipam.Claim{r.claim(poolNames(alloc.cfg))})
		return ipam.Assignment{}, err
	}
	a, err := alloc.book.Allocate(req)
	if err != nil {
		a = alloc.book.Retain(req)
	}
	// An address the Service's policy does not want stays reserved.
	alloc.holdReservations([]*Reservation{r}, time.Now())
	return a, nil
}

// ReservedByPool counts, per pool, the addresses stand-ins hold. O(R).
func (alloc *Allocator) ReservedByPool() map[string]int {
	out := map[string]int{}
	if alloc.reserved == nil {
		return out
	}
	for _, r := range alloc.reserved.byObject {
		if held, ok := alloc.book.Assigned(r.StandIn()); ok {
			out[held.Pool] += len(held.Addrs)
		}
	}
	return out
}

func poolNames(cfg *config.Config) []string {
	var out []string
	for _, p := range cfg.Pools() {
		out = append(out, p.Name())
	}
	return out
}

// errNothingHeld: the reservation's stand-in holds no address the Service
// could take (another Service holds them, or they are of another family).
var errNothingHeld = fmt.Errorf("%w: the reservation holds no address of a family the service wants", ipam.ErrRequestedIPInUse)
