package controller

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// decision is what the controller wants a Service to show.
type decision struct {
	addrs     []netip.Addr
	pool      string // the ip-allocated-from-pool annotation; "" removes it
	condition metav1.Condition
	events    []notice
}

// notice is a Kubernetes event to emit once the decision is written.
type notice struct {
	warning bool
	reason  string
	note    string
}

// decide runs the book for one Service. The caller holds alloc.mu.
func decide(alloc *allocator, svc *corev1.Service, nsLabels labels.Set) decision {
	d := choose(alloc, svc, nsLabels)
	// Said from what the Service shows rather than from what the book
	// held: after a failed write the book may already have let go.
	if shown := statusAddresses(svc); len(shown) > 0 && len(d.addrs) == 0 {
		d.events = append(d.events, notice{false, EventClearAssignment,
			fmt.Sprintf("cleared %s: no pool that may serve the service allows it, or another service holds it", addrList(shown))})
	}
	return d
}

// choose decides which addresses a Service should show, and why.
func choose(alloc *allocator, svc *corev1.Service, nsLabels labels.Set) decision {
	k := key(svc)
	held, holds := alloc.book.Assigned(k)
	d := decision{addrs: held.Addrs, pool: held.Pool}
	parsed, err := parseService(svc)
	for _, name := range parsed.deprecated {
		d.events = append(d.events, notice{true, EventDeprecatedAnnotation,
			fmt.Sprintf("annotation %s is deprecated; use %s", name, strings.Replace(name, deprecatedPrefix, prefix, 1))})
	}
	if err != nil {
		// A request we cannot read changes nothing: the Service keeps
		// what it holds until it asks for something we can serve.
		if errors.Is(err, errNotEnoughClusterIPs) {
			d.events = append(d.events, notice{true, EventNotEnoughClusterIPs, err.Error()})
		}
		return d.failed(err)
	}
	parsed.EligiblePools = eligiblePools(alloc.cfg, svc.Namespace, nsLabels, svc.Labels)
	a, err := alloc.book.Allocate(parsed.Request)
	if err != nil {
		if holds && !stillAllowed(held, parsed.Request) {
			alloc.book.Release(k)
			d.addrs, d.pool = nil, ""
		}
		return d.failed(err)
	}
	d.addrs, d.pool = a.Addrs, a.Pool
	d.condition = metav1.Condition{Type: ConditionAddressAssigned, Status: metav1.ConditionTrue,
		Reason: ReasonAssigned, Message: fmt.Sprintf("assigned %s from pool %q", addrList(a.Addrs), a.Pool)}
	if !sameAddrs(a.Addrs, statusAddresses(svc)) {
		d.events = append(d.events, notice{false, EventIPAllocated,
			fmt.Sprintf("Assigned IP %s from pool %q", addrList(a.Addrs), a.Pool)})
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

// claimFor describes what a Service's status shows, for Book.Restore. A
// Service whose request cannot be parsed still claims its addresses: they
// are held, and only the book may judge them.
func claimFor(cfg *config.Config, svc *corev1.Service, nsLabels labels.Set) ipam.Claim {
	parsed, _ := parseService(svc)
	parsed.EligiblePools = eligiblePools(cfg, svc.Namespace, nsLabels, svc.Labels)
	return ipam.Claim{Request: parsed.Request, Addrs: statusAddresses(svc), Created: svc.CreationTimestamp.Time}
}

func addrList(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}
