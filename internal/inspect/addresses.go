package inspect

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// AddressRow is one assigned or reserved address.
type AddressRow struct {
	Address string `json:"address"`
	Pool    string `json:"pool"`
	// Services hold it; none when a reservation keeps it.
	Services []string `json:"services"`
	// Sharing is the allow-shared-ip key it is held under ("" = none).
	Sharing string `json:"sharing,omitempty"`
	// Since is when the oldest holder's AddressAssigned condition last
	// turned true, or else when it was created; for a reserved address,
	// when the reservation was created.
	Since time.Time `json:"since"`
	// Reservation is the AddressReservation that keeps the address, or
	// that its Service holds it by.
	Reservation *ReservedBy `json:"reservation,omitempty"`
	addr        netip.Addr
}

// ReservedBy is the AddressReservation behind an address.
type ReservedBy struct {
	// Name is the reservation's namespace/name; Service the Service, in
	// the same namespace, it keeps the address for.
	Name    string `json:"name"`
	Service string `json:"service"`
	// Bound: the Service holds the address. Otherwise the reservation
	// keeps it from everyone else.
	Bound bool `json:"bound"`
	// Retained: kept for a deleted Service, until Until.
	Retained bool       `json:"retained,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
}

// FreeRow is one span of free addresses.
type FreeRow struct {
	Pool  string `json:"pool"`
	First string `json:"first"`
	Last  string `json:"last"`
}

// Filter narrows the addresses view.
type Filter struct {
	// Pool: only this pool ("" = all).
	Pool string
	// Namespace: only addresses held by a Service of this namespace ("" =
	// all).
	Namespace string
}

// ErrUnknownPool is returned for a pool the configuration does not have.
var ErrUnknownPool = fmt.Errorf("unknown pool")

// Addresses returns every address the controller assigns or a
// reservation keeps, in address order. It reads the decisions
// KeepAssigned keeps.
func (s *State) Addresses(f Filter) ([]AddressRow, error) {
	if err := s.checkPool(f.Pool); err != nil {
		return nil, err
	}
	book := s.Replayed.Book
	// Sized for one address per Service: the rows are the largest thing
	// the view makes, and growing them copies megabytes.
	rows := make([]AddressRow, 0, len(s.Replayed.Verdicts))
	// seen holds the shared addresses already listed. An address with one
	// holder is in that holder's decision only (a decision never takes an
	// address another Service holds), so most addresses need no entry.
	var seen map[netip.Addr]bool
	for i := range s.Replayed.Verdicts {
		v := &s.Replayed.Verdicts[i]
		if f.Namespace != "" && v.Service.Namespace != f.Namespace {
			continue
		}
		for _, a := range v.Addrs {
			pool, _ := book.PoolOf(a)
			if f.Pool != "" && pool != f.Pool {
				continue
			}
			one := [1]ipam.ServiceKey{v.Service}
			holders := one[:]
			if sole, ok := book.SoleHolder(a); !ok || sole != v.Service {
				if seen[a] {
					continue
				}
				if seen == nil {
					seen = map[netip.Addr]bool{}
				}
				seen[a] = true
				holders = book.Holders(a)
			}
			sharing, _ := book.SharingOf(holders[0])
			rows = append(rows, AddressRow{addr: a, Address: a.String(), Pool: pool, Services: keyStrings(holders),
				Sharing: sharing.Sharing, Since: s.since(v, holders), Reservation: s.boundBy(v.Service, a)})
		}
	}
	rows = append(rows, s.reservedRows(f)...)
	slices.SortFunc(rows, func(x, y AddressRow) int { return x.addr.Compare(y.addr) })
	return rows, nil
}

// reservedRows are the addresses reservations keep for a Service that
// does not hold them.
func (s *State) reservedRows(f Filter) []AddressRow {
	var rows []AddressRow
	for _, r := range s.Replayed.Reservations {
		if (f.Namespace != "" && r.Object.Namespace != f.Namespace) || (f.Pool != "" && r.Pool != f.Pool) {
			continue
		}
		for _, a := range r.Held {
			rows = append(rows, AddressRow{addr: a, Address: a.String(), Pool: r.Pool, Services: []string{},
				Since: r.Created.UTC(), Reservation: reservedBy(r, false)})
		}
	}
	return rows
}

// boundBy is the reservation a Service holds an address by, if any.
func (s *State) boundBy(svc ipam.ServiceKey, a netip.Addr) *ReservedBy {
	for _, r := range s.Replayed.Reservations {
		if r.Object.Namespace == svc.Namespace && r.Service == svc.Name && slices.Contains(r.Addrs, a) &&
			!slices.Contains(r.Held, a) && !r.Expired {
			return reservedBy(r, true)
		}
	}
	return nil
}

func reservedBy(r assign.ReservationVerdict, bound bool) *ReservedBy {
	b := &ReservedBy{Name: r.Object.String(), Service: r.Service, Bound: bound, Retained: r.Retained}
	if !r.Expires.IsZero() {
		until := r.Expires.UTC()
		b.Until = &until
	}
	return b
}

// Free returns the free spans of one pool, or of every pool by name. It
// reads no decision (KeepNone).
func (s *State) Free(pool string) ([]FreeRow, error) {
	if err := s.checkPool(pool); err != nil {
		return nil, err
	}
	var rows []FreeRow
	for _, p := range s.Replayed.Config.Pools() {
		if pool != "" && p.Name() != pool {
			continue
		}
		spans, _ := s.Replayed.Book.FreeRanges(p.Name())
		for _, r := range spans {
			rows = append(rows, FreeRow{Pool: p.Name(), First: r.From().String(), Last: r.To().String()})
		}
	}
	return rows, nil
}

func (s *State) checkPool(pool string) error {
	if pool == "" {
		return nil
	}
	if _, ok := s.Replayed.Config.Pool(pool); !ok {
		return fmt.Errorf("%w %q: the IPAddressPools in the configuration namespace are %v", ErrUnknownPool, pool, s.poolNames())
	}
	return nil
}

func (s *State) poolNames() []string {
	var out []string
	for _, p := range s.Replayed.Config.Pools() {
		out = append(out, p.Name())
	}
	return out
}

// since is when the earliest of the holders got its address; v is the
// decision of one of them. An address most often has that one holder, and
// then the decision at hand answers without the index of every decision.
func (s *State) since(v *assign.Verdict, holders []ipam.ServiceKey) time.Time {
	if len(holders) == 1 && holders[0] == v.Service {
		return assignedSince(v.Object).UTC()
	}
	var first time.Time
	for _, k := range holders {
		v, ok := s.Replayed.Verdict(k)
		if !ok {
			continue
		}
		if t := assignedSince(v.Object); first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first.UTC()
}

// assignedSince is when a Service's AddressAssigned condition last turned
// true, or else when it was created.
func assignedSince(svc *corev1.Service) time.Time {
	if c := meta.FindStatusCondition(svc.Status.Conditions, assign.ConditionAddressAssigned); c != nil && c.Status == "True" {
		return c.LastTransitionTime.Time
	}
	return svc.CreationTimestamp.Time
}
