package inspect

import (
	"cmp"
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
	// holder is the Service whose decision made the row.
	holder *corev1.Service
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
	// Sized for one address per Service: the rows are the largest thing
	// the view makes, and growing them copies megabytes.
	rows := make([]AddressRow, 0, len(s.Replayed.Verdicts))
	for i := range s.Replayed.Verdicts {
		v := &s.Replayed.Verdicts[i]
		rows = heldRows(rows, v.Object, v.Addrs, f)
	}
	return s.finishRows(rows, f), nil
}

// heldRows appends the rows of the addresses one decision gives its
// Service (obj), as that decision alone tells them: the Service as their
// only holder. finishRows completes them from the book.
func heldRows(rows []AddressRow, obj *corev1.Service, addrs []netip.Addr, f Filter) []AddressRow {
	if f.Namespace != "" && obj.Namespace != f.Namespace {
		return rows
	}
	for _, a := range addrs {
		rows = append(rows, AddressRow{addr: a, Address: a.String(), Services: []string{assign.Key(obj).String()},
			Since: assignedSince(obj).UTC(), holder: obj})
	}
	return rows
}

// finishRows completes the rows heldRows made with what the book says once
// every Service is decided: each address's pool and sharing key, every
// Service that shares it (a shared address is listed once, dated by its
// earliest holder) and the reservation it is held by; then adds the
// addresses reservations keep and sorts them all by address.
func (s *State) finishRows(rows []AddressRow, f Filter) []AddressRow {
	book := s.Replayed.Book
	// seen holds the shared addresses already listed. An address with one
	// holder is in that holder's decision only (a decision never takes an
	// address another Service holds), so most addresses need no entry.
	var seen map[netip.Addr]bool
	out := rows[:0]
	for _, r := range rows {
		pool, _ := book.PoolOf(r.addr)
		if f.Pool != "" && pool != f.Pool {
			continue
		}
		k := assign.Key(r.holder)
		holders := []ipam.ServiceKey{k}
		if sole, ok := book.SoleHolder(r.addr); !ok || sole != k {
			if seen[r.addr] {
				continue
			}
			if seen == nil {
				seen = map[netip.Addr]bool{}
			}
			seen[r.addr] = true
			holders = book.Holders(r.addr)
			r.Services, r.Since = keyStrings(holders), s.earliestSince(holders)
		}
		sharing, _ := book.SharingOf(holders[0])
		r.Pool, r.Sharing, r.Reservation = pool, sharing.Sharing, s.boundBy(k, r.addr)
		out = append(out, r)
	}
	out = append(out, s.reservedRows(f)...)
	sortByAddress(out)
	return out
}

// rowKey is a row's address and where the row is.
type rowKey struct {
	addr netip.Addr
	at   int
}

// sortByAddress sorts rows by address (ties, which no view makes, by
// their order). It sorts the addresses with the rows' places and then
// moves each row once, to its place: sorting the rows themselves moved
// each of them, 136 bytes, about log n times (2 ms of the addresses view
// at 10,000 rows, after the replay).
func sortByAddress(rows []AddressRow) {
	keys := make([]rowKey, len(rows))
	for i := range rows {
		keys[i] = rowKey{rows[i].addr, i}
	}
	slices.SortFunc(keys, func(x, y rowKey) int { return cmp.Or(x.addr.Compare(y.addr), cmp.Compare(x.at, y.at)) })
	// Row keys[i].at goes to place i. Each cycle of that permutation is
	// followed from its first place, whose row waits aside until the
	// cycle closes; a place done is marked with at = -1.
	for first := range keys {
		if keys[first].at < 0 {
			continue
		}
		waiting := rows[first]
		for i := first; ; {
			from := keys[i].at
			keys[i].at = -1
			if from == first {
				rows[i] = waiting
				break
			}
			rows[i], i = rows[from], from
		}
	}
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

// earliestSince is when the earliest of the holders of a shared address
// got it. Shared addresses are few: the index of every Service is made at
// the first.
func (s *State) earliestSince(holders []ipam.ServiceKey) time.Time {
	s.objectsOnce.Do(func() {
		s.objects = make(map[ipam.ServiceKey]*corev1.Service, len(s.Cluster.Services))
		for i := range s.Cluster.Services {
			s.objects[assign.Key(&s.Cluster.Services[i])] = &s.Cluster.Services[i]
		}
	})
	var first time.Time
	for _, k := range holders {
		obj, ok := s.objects[k]
		if !ok {
			continue
		}
		if t := assignedSince(obj); first.IsZero() || t.Before(first) {
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

// AddressMaker makes the addresses view while the replay decides: a
// State made with its Keep keeps no decision, and the rows come from the
// decisions as the replay takes them, on a goroutine of their own. The
// replay is the book's work on one core; the rows (a string per address,
// per Service, a date) can be made on the other, and Rows completes them
// from the book. The rows are those Addresses gives from a State that
// kept the decisions.
type AddressMaker struct {
	f       Filter
	batch   []decided
	batches chan []decided
	rows    chan []AddressRow
}

// decided is what heldRows reads of a decision: a verdict is decided into
// a slot the next decision reuses, its Service and addresses are not.
type decided struct {
	obj   *corev1.Service
	addrs []netip.Addr
}

// rowBatch is how many decisions go over at once.
const rowBatch = 256

// MakeAddresses starts making the addresses view of f for a cluster of
// about n Services.
func MakeAddresses(f Filter, n int) *AddressMaker {
	am := &AddressMaker{f: f, batches: make(chan []decided, 4), rows: make(chan []AddressRow, 1)}
	go func() {
		rows := make([]AddressRow, 0, n)
		for batch := range am.batches {
			for _, d := range batch {
				rows = heldRows(rows, d.obj, d.addrs, f)
			}
		}
		am.rows <- rows
	}()
	return am
}

// Keep is what to make the State with: it hands each decision with
// addresses over and keeps none.
func (am *AddressMaker) Keep(v *assign.Verdict) bool {
	if len(v.Addrs) == 0 {
		return false
	}
	if am.batch = append(am.batch, decided{v.Object, v.Addrs}); len(am.batch) == rowBatch {
		am.batches <- am.batch
		am.batch = make([]decided, 0, rowBatch)
	}
	return false
}

// Rows waits for the rows and completes them from s, the State made with
// Keep; with a nil s (the replay failed) it only waits.
func (am *AddressMaker) Rows(s *State) ([]AddressRow, error) {
	if len(am.batch) > 0 {
		am.batches <- am.batch
	}
	close(am.batches)
	rows := <-am.rows
	if s == nil {
		return nil, nil
	}
	if err := s.checkPool(am.f.Pool); err != nil {
		return nil, err
	}
	return s.finishRows(rows, am.f), nil
}
