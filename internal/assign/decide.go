package assign

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// Decision is what the controller wants a Service to show.
type Decision struct {
	Addrs  []netip.Addr
	Pool   string // the ip-allocated-from-pool annotation; "" removes it
	Record string // the AnnotationAllocation value; "" removes it
	// IPMode for every ingress entry; "" keeps what each entry has.
	IPMode    corev1.LoadBalancerIPMode
	origin    Origin
	Condition metav1.Condition
	// Events go out once the decision is written.
	Events []Event
	// Deferred: decided for the startup barrier's recall step, the
	// Service's record could not be honoured, and nothing was decided;
	// or decided by an unchangedOnly allocator, the decision would change
	// the book.
	Deferred bool
	// request is the Service's request as read, with the pools that admit
	// it; requestErr says why it cannot be read. For the plugin's verdict.
	request    ipam.Request
	requestErr error
}

// Decide runs the book for one Service. The caller holds the lock.
//
// Which request changes keep an address (make before break, invariant 4):
//
//   - A request that cannot be read (a malformed annotation) changes
//     nothing: the Service keeps what it holds, under the terms it holds it.
//   - A request that can be served moves the Service straight from its old
//     addresses to the new ones; an old address it may keep, it keeps.
//   - A request that cannot be served (pool full, requested IP in use)
//     keeps the old addresses the new request still allows: their pool
//     still admits the Service and is the one it pins, if any; their family
//     is wanted; and the Service may still share them under its new key and
//     ports. Anything else is given up at once: a Service that changes its
//     sharing key or ports so that it clashes with those it shares an
//     address with loses that address, and they never move.
func (alloc *Allocator) Decide(svc *corev1.Service, nsLabels labels.Set) Decision {
	return decideWith(alloc, svc, nsLabels, true)
}

// DecideRecall is Decide for the startup barrier's recall step: a Service
// gets the addresses kept for it (its reservation, its allocation record)
// or nothing at all. A record that cannot be honoured leaves the book as
// it was and the decision deferred: the Service is then served with the
// pending ones, by age, as if it had no record. The caller holds the
// lock.
func (alloc *Allocator) DecideRecall(svc *corev1.Service, nsLabels labels.Set) Decision {
	return decideWith(alloc, svc, nsLabels, false)
}

// DeciderFor is the decision the startup barrier makes for a Service
// served in step: DecideRecall in the recall step, Decide in the others.
// The barrier and Replay both serve by it.
func DeciderFor(step Step) func(*Allocator, *corev1.Service, labels.Set) Decision {
	if step == StepRecalled {
		return (*Allocator).DecideRecall
	}
	return (*Allocator).Decide
}

// decideWith is Decide; fresh says whether a fresh address may be taken.
func decideWith(alloc *Allocator, svc *corev1.Service, nsLabels labels.Set, fresh bool) Decision {
	d := choose(alloc, svc, nsLabels, fresh)
	if d.Deferred {
		return d
	}
	if !alloc.readOnly && len(d.Addrs) > 0 {
		if sharing, ports, ok := alloc.book.Terms(Key(svc)); ok {
			d.Record = renderRecord(d.Addrs, sharing, ports)
		}
	}
	// Said from what the Service shows rather than from what the book
	// held: after a failed write the book may already have let go.
	if len(d.Addrs) == 0 && ShowsAddress(svc) {
		d.Events = append(d.Events, Event{false, EventClearAssignment,
			fmt.Sprintf("cleared %s: no pool that may serve the service allows it, or another service holds it", addrList(StatusAddresses(svc)))})
	}
	return d
}

// choose decides which addresses a Service should show, and why.
func choose(alloc *Allocator, svc *corev1.Service, nsLabels labels.Set, fresh bool) Decision {
	k := Key(svc)
	holds := alloc.book.Holds(k)
	if alloc.unchangedOnly && !holds { // it can only take addresses
		return Decision{Deferred: true}
	}
	var d Decision
	parsed, err := alloc.requestOf(svc, nsLabels)
	d.request, d.requestErr = parsed.Request, err
	for _, name := range parsed.deprecated {
		d.Events = append(d.Events, Event{true, EventDeprecatedAnnotation,
			fmt.Sprintf("annotation %s is deprecated; use %s", name, strings.Replace(name, deprecatedPrefix, prefix, 1))})
	}
	if err != nil {
		if errors.Is(err, errNotEnoughClusterIPs) {
			d.Events = append(d.Events, Event{true, EventNotEnoughClusterIPs, err.Error()})
		}
		// Copied only here: every other outcome replaces what it holds.
		held, _ := alloc.book.Assigned(k)
		d.Addrs, d.Pool = held.Addrs, held.Pool
		return d.failed(err)
	}
	d.IPMode = parsed.ipMode
	a, origin, notes := reclaim(alloc, svc, parsed.Request, holds)
	if len(a.Addrs) == 0 && !holds && !fresh {
		return Decision{Deferred: true}
	}
	d.origin = origin
	d.Events = append(d.Events, notes...)
	if len(a.Addrs) == 0 {
		if alloc.unchangedOnly {
			var same bool
			if a, same = alloc.book.Unchanged(parsed.Request); !same {
				return Decision{Deferred: true}
			}
		} else if a, err = alloc.book.Allocate(parsed.Request); err != nil {
			kept := alloc.book.Retain(parsed.Request)
			d.Addrs, d.Pool = kept.Addrs, kept.Pool
			return d.failed(err).reservedRoom(alloc, parsed.Request, err)
		}
	}
	d.Addrs, d.Pool = a.Addrs, a.Pool
	d.Condition = metav1.Condition{Type: ConditionAddressAssigned, Status: metav1.ConditionTrue,
		Reason: ReasonAssigned, Message: assignedMessage(a)}
	if !showsExactly(svc, a.Addrs) {
		d.Events = append(d.Events, Event{false, EventIPAllocated,
			fmt.Sprintf("Assigned IP %s from pool %q%s", addrList(a.Addrs), a.Pool, origin.phrase())})
	}
	return d
}

// reservedRoom tells a Service that found its pools full whether
// reservations (AddressReservations, retained addresses of deleted
// Services) are what fills them.
func (d Decision) reservedRoom(alloc *Allocator, req ipam.Request, err error) Decision {
	if !errors.Is(err, ipam.ErrPoolExhausted) {
		return d
	}
	pools := req.EligiblePools
	if req.Pool != "" {
		pools = []string{req.Pool}
	}
	n, reserved := 0, alloc.ReservedByPool()
	for _, p := range pools {
		n += reserved[p]
	}
	if n > 0 {
		d.Condition.Reason = ReasonPoolExhaustedByReservations
		d.Condition.Message += fmt.Sprintf("; %d addresses of the pools that may serve it are reserved (AddressReservations, or retained for deleted Services)", n)
	}
	return d
}

func (d Decision) failed(err error) Decision {
	d.Condition = metav1.Condition{Type: ConditionAddressAssigned, Status: metav1.ConditionFalse,
		Reason: reasonFor(err), Message: err.Error()}
	if len(d.Addrs) > 0 {
		d.Condition.Message += fmt.Sprintf("; keeping %s", addrList(d.Addrs))
	}
	d.Events = append(d.Events, Event{true, EventAllocationFailed, "Failed to allocate IP: " + err.Error()})
	return d
}

// Claim describes what a Service's status shows, for Book.Restore, under
// the terms its addresses are held under: the recorded ones when the
// record matches the status, else those of the current spec as far as it
// can be read. A Service whose request cannot be parsed still claims its
// addresses: they are held, and only the book may judge them.
func (alloc *Allocator) Claim(svc *corev1.Service, nsLabels labels.Set) ipam.Claim {
	return claimOf(alloc.cfg, svc, nsLabels, StatusAddresses(svc))
}

// claimOf is Claim for a caller that has read the status addresses.
func claimOf(cfg *config.Config, svc *corev1.Service, nsLabels labels.Set, shown []netip.Addr) ipam.Claim {
	return readRequestOf(cfg, svc, nsLabels).claim(svc, shown)
}

// readRequest is a Service's request as a decision reads it: parseService's
// outcome, with the pools that admit the Service.
type readRequest struct {
	parsed serviceRequest
	err    error
}

func readRequestOf(cfg *config.Config, svc *corev1.Service, nsLabels labels.Set) readRequest {
	parsed, err := parseService(svc)
	parsed.EligiblePools = EligiblePools(cfg, svc.Namespace, nsLabels, svc.Labels)
	return readRequest{parsed: parsed, err: err}
}

// claim is the Claim of a Service showing addresses shown, read as r.
func (r readRequest) claim(svc *corev1.Service, shown []netip.Addr) ipam.Claim {
	req := r.parsed.Request
	if t, ok := recordedTerms(svc); ok {
		req.Sharing = t.sharing
		// The book reads a holder's ports only under a sharing key (does
		// it clash with another holder?), and a record without one has
		// none: the Service's own ports then make the request its first
		// decision keeps, which need not change the book.
		if t.sharing.Sharing != "" {
			req.Ports = t.ports
		}
	}
	return ipam.Claim{Request: req, Addrs: shown, Created: svc.CreationTimestamp.Time}
}

// requestOf reads a Service's request for a decision, or takes the read
// a Prerestore made of it while it was listed.
func (alloc *Allocator) requestOf(svc *corev1.Service, nsLabels labels.Set) (serviceRequest, error) {
	r, ok := alloc.read.get(svc)
	if !ok {
		r = readRequestOf(alloc.cfg, svc, nsLabels)
	}
	return r.parsed, r.err
}

// requestReads are requests read ahead of the decisions, by Service (the
// listed object itself, which the reader must not have changed since).
// The reads sit in slabs rather than in the map, which would allocate
// each (a read is too large for a map to hold in place), or in one
// growing slice, which would copy them all each time it grows.
type requestReads struct {
	index map[*corev1.Service]*readRequest
	slab  []readRequest // filled to its capacity, then another
}

// readSlab is how many reads a slab holds (27 KB).
const readSlab = 128

func newRequestReads() *requestReads {
	return &requestReads{index: map[*corev1.Service]*readRequest{}}
}

func (rr *requestReads) add(svc *corev1.Service, r readRequest) {
	if len(rr.slab) == cap(rr.slab) {
		rr.slab = make([]readRequest, 0, readSlab)
	}
	rr.slab = append(rr.slab, r)
	rr.index[svc] = &rr.slab[len(rr.slab)-1]
}

// get returns the read of svc; a nil requestReads has none.
func (rr *requestReads) get(svc *corev1.Service) (readRequest, bool) {
	if rr == nil {
		return readRequest{}, false
	}
	r, ok := rr.index[svc]
	if !ok {
		return readRequest{}, false
	}
	return *r, true
}

// assignedMessage is the Assigned condition's message, `assigned [addrs]
// from pool "name"`. Every decision writes one, so it is built in one
// buffer rather than through fmt.
func assignedMessage(a ipam.Assignment) string {
	b := make([]byte, 0, 64)
	b = append(b, "assigned "...)
	b = appendAddrList(b, a.Addrs)
	b = append(b, " from pool "...)
	return string(strconv.AppendQuote(b, a.Pool))
}

func addrList(addrs []netip.Addr) string {
	return string(appendAddrList(make([]byte, 0, 2+len(addrs)*40), addrs))
}

// appendAddrList appends addrs as "[a,b]".
func appendAddrList(b []byte, addrs []netip.Addr) []byte {
	b = append(b, '[')
	for i, a := range addrs {
		if i > 0 {
			b = append(b, ',')
		}
		if !a.IsValid() {
			b = append(b, a.String()...) // AppendTo writes nothing for it
			continue
		}
		b = a.AppendTo(b)
	}
	return append(b, ']')
}
