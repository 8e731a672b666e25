package controller

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

// decision is what the controller wants a Service to show.
type decision struct {
	addrs  []netip.Addr
	pool   string // the ip-allocated-from-pool annotation; "" removes it
	record string // the AnnotationAllocation value; "" removes it
	// ipMode for every ingress entry; "" keeps what each entry has.
	ipMode    corev1.LoadBalancerIPMode
	origin    Origin
	condition metav1.Condition
	events    []notice
	// deferred: decided for the startup barrier's recall step, the
	// Service's record could not be honoured, and nothing was decided.
	deferred bool
	// request is the Service's request as read, with the pools that admit
	// it; requestErr says why it cannot be read. For the plugin's verdict.
	request    ipam.Request
	requestErr error
}

// notice is a Kubernetes event to emit once the decision is written.
type notice struct {
	warning bool
	reason  string
	note    string
}

// decide runs the book for one Service. The caller holds alloc.mu.
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
func decide(alloc *allocator, svc *corev1.Service, nsLabels labels.Set) decision {
	return decideWith(alloc, svc, nsLabels, true)
}

// decideRecall is decide for the startup barrier's recall step: a Service
// gets the addresses kept for it (its reservation, its allocation record)
// or nothing at all. A record that cannot be honoured leaves the book as
// it was and the decision deferred: the Service is then served with the
// pending ones, by age, as if it had no record. The caller holds
// alloc.mu.
func decideRecall(alloc *allocator, svc *corev1.Service, nsLabels labels.Set) decision {
	return decideWith(alloc, svc, nsLabels, false)
}

// decideWith is decide; fresh says whether a fresh address may be taken.
func decideWith(alloc *allocator, svc *corev1.Service, nsLabels labels.Set, fresh bool) decision {
	d := choose(alloc, svc, nsLabels, fresh)
	if d.deferred {
		return d
	}
	if !alloc.readOnly && len(d.addrs) > 0 {
		if sharing, ports, ok := alloc.book.Terms(key(svc)); ok {
			d.record = renderRecord(d.addrs, sharing, ports)
		}
	}
	// Said from what the Service shows rather than from what the book
	// held: after a failed write the book may already have let go.
	if len(d.addrs) == 0 && showsAddress(svc) {
		d.events = append(d.events, notice{false, EventClearAssignment,
			fmt.Sprintf("cleared %s: no pool that may serve the service allows it, or another service holds it", addrList(statusAddresses(svc)))})
	}
	return d
}

// choose decides which addresses a Service should show, and why.
func choose(alloc *allocator, svc *corev1.Service, nsLabels labels.Set, fresh bool) decision {
	k := key(svc)
	holds := alloc.book.Holds(k)
	var d decision
	parsed, err := parseService(svc)
	parsed.EligiblePools = eligiblePools(alloc.cfg, svc.Namespace, nsLabels, svc.Labels)
	d.request, d.requestErr = parsed.Request, err
	for _, name := range parsed.deprecated {
		d.events = append(d.events, notice{true, EventDeprecatedAnnotation,
			fmt.Sprintf("annotation %s is deprecated; use %s", name, strings.Replace(name, deprecatedPrefix, prefix, 1))})
	}
	if err != nil {
		if errors.Is(err, errNotEnoughClusterIPs) {
			d.events = append(d.events, notice{true, EventNotEnoughClusterIPs, err.Error()})
		}
		// Copied only here: every other outcome replaces what it holds.
		held, _ := alloc.book.Assigned(k)
		d.addrs, d.pool = held.Addrs, held.Pool
		return d.failed(err)
	}
	d.ipMode = parsed.ipMode
	a, origin, notes := reclaim(alloc, svc, parsed.Request, holds)
	if len(a.Addrs) == 0 && !holds && !fresh {
		return decision{deferred: true}
	}
	d.origin = origin
	d.events = append(d.events, notes...)
	if len(a.Addrs) == 0 {
		if a, err = alloc.book.Allocate(parsed.Request); err != nil {
			kept := alloc.book.Retain(parsed.Request)
			d.addrs, d.pool = kept.Addrs, kept.Pool
			return d.failed(err).reservedRoom(alloc, parsed.Request, err)
		}
	}
	d.addrs, d.pool = a.Addrs, a.Pool
	d.condition = metav1.Condition{Type: ConditionAddressAssigned, Status: metav1.ConditionTrue,
		Reason: ReasonAssigned, Message: assignedMessage(a)}
	if !showsExactly(svc, a.Addrs) {
		d.events = append(d.events, notice{false, EventIPAllocated,
			fmt.Sprintf("Assigned IP %s from pool %q%s", addrList(a.Addrs), a.Pool, origin.phrase())})
	}
	return d
}

// reservedRoom tells a Service that found its pools full whether
// reservations (AddressReservations, retained addresses of deleted
// Services) are what fills them.
func (d decision) reservedRoom(alloc *allocator, req ipam.Request, err error) decision {
	if !errors.Is(err, ipam.ErrPoolExhausted) {
		return d
	}
	pools := req.EligiblePools
	if req.Pool != "" {
		pools = []string{req.Pool}
	}
	n, reserved := 0, alloc.reservedByPool()
	for _, p := range pools {
		n += reserved[p]
	}
	if n > 0 {
		d.condition.Reason = ReasonPoolExhaustedByReservations
		d.condition.Message += fmt.Sprintf("; %d addresses of the pools that may serve it are reserved (AddressReservations, or retained for deleted Services)", n)
	}
	return d
}

func (d decision) failed(err error) decision {
	d.condition = metav1.Condition{Type: ConditionAddressAssigned, Status: metav1.ConditionFalse,
		Reason: reasonFor(err), Message: err.Error()}
	if len(d.addrs) > 0 {
		d.condition.Message += fmt.Sprintf("; keeping %s", addrList(d.addrs))
	}
	d.events = append(d.events, notice{true, EventAllocationFailed, "Failed to allocate IP: " + err.Error()})
	return d
}

// claimFor describes what a Service's status shows, for Book.Restore,
// under the terms its addresses are held under: the recorded ones when
// the record matches the status, else those of the current spec as far
// as it can be read. A Service whose request cannot be parsed still claims
// its addresses: they are held, and only the book may judge them.
func claimFor(cfg *config.Config, svc *corev1.Service, nsLabels labels.Set) ipam.Claim {
	return claimOf(cfg, svc, nsLabels, statusAddresses(svc))
}

// claimOf is claimFor for a caller that has read the status addresses.
func claimOf(cfg *config.Config, svc *corev1.Service, nsLabels labels.Set, shown []netip.Addr) ipam.Claim {
	parsed, _ := parseService(svc)
	parsed.EligiblePools = eligiblePools(cfg, svc.Namespace, nsLabels, svc.Labels)
	if t, ok := recordedTerms(svc); ok {
		parsed.Sharing, parsed.Ports = t.sharing, t.ports
	}
	return ipam.Claim{Request: parsed.Request, Addrs: shown, Created: svc.CreationTimestamp.Time}
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
