package ipam

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	"go4.org/netipx"
)

// Family is an IP address family.
type Family uint8

const (
	// IPv4 is the IPv4 family. The zero Family is invalid on purpose, so a
	// caller that forgets to set Request.Primary gets ErrInvalidRequest.
	IPv4 Family = 1 + iota
	// IPv6 is the IPv6 family.
	IPv6
)

// families lists the families in the order assignments are sorted in.
var families = [2]Family{IPv4, IPv6}

func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return "unknown family"
}

// other returns the other family.
func (f Family) other() Family {
	if f == IPv4 {
		return IPv6
	}
	return IPv4
}

// slot is the array index of a valid family.
func (f Family) slot() int { return int(f) - 1 }

// FamilyOf returns the family of a (IPv4-mapped IPv6 addresses are IPv6).
func FamilyOf(a netip.Addr) Family {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// FamilyPolicy is the Service's spec.ipFamilyPolicy as far as addresses go.
type FamilyPolicy uint8

const (
	// SingleStack: one address of the primary family. The caller also
	// passes SingleStack for a PreferDualStack Service that has a single
	// ClusterIP (as in MetalLB, it gets only that family).
	SingleStack FamilyPolicy = iota
	// PreferDualStack: both families from one pool if any pool can, else
	// the primary family, else the secondary.
	PreferDualStack
	// RequireDualStack: one address of each family from one pool.
	RequireDualStack
)

func (p FamilyPolicy) String() string {
	switch p {
	case SingleStack:
		return "SingleStack"
	case PreferDualStack:
		return "PreferDualStack"
	case RequireDualStack:
		return "RequireDualStack"
	}
	return "unknown policy"
}

// wants reports whether the policy accepts an address of family f when
// the primary family is primary.
func (p FamilyPolicy) wants(primary, f Family) bool {
	return p != SingleStack || f == primary
}

// Pool is one IPAddressPool as the address book needs it. The config
// package converts the API object; CIDRs arrive already as ranges.
type Pool struct {
	Name string
	// Ranges in spec order; allocation fills them in this order.
	Ranges []netipx.IPRange
	// AvoidBuggyIPs excludes IPv4 addresses ending in .0 and .255.
	AvoidBuggyIPs bool
	// AutoAssign lets requests without a pinned pool or IP use the pool.
	AutoAssign bool
	// HasServiceAllocation is true when spec.serviceAllocation is set;
	// such pools are tried before pools without it.
	HasServiceAllocation bool
	// Priority from serviceAllocation: lower positive first; zero or
	// negative means unset and sorts after every positive priority.
	Priority int
}

// ServiceKey names a Service.
type ServiceKey struct{ Namespace, Name string }

func (k ServiceKey) String() string { return k.Namespace + "/" + k.Name }

func (k ServiceKey) compare(o ServiceKey) int {
	if k.Namespace != o.Namespace {
		if k.Namespace < o.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case k.Name < o.Name:
		return -1
	case k.Name > o.Name:
		return 1
	}
	return 0
}

// Port is one (protocol, port) pair of a Service.
type Port struct {
	Protocol string
	Port     int32
}

func (p Port) String() string { return p.Protocol + "/" + strconv.Itoa(int(p.Port)) }

func (p Port) compare(o Port) int {
	if p.Protocol != o.Protocol {
		if p.Protocol < o.Protocol {
			return -1
		}
		return 1
	}
	return int(p.Port) - int(o.Port)
}

// SharingKey decides who may share an address, by MetalLB's sharing rule.
type SharingKey struct {
	// Sharing is the allow-shared-ip annotation; empty means no sharing.
	Sharing string
	// Backend is the selector string under externalTrafficPolicy Local,
	// else empty.
	Backend string
}

// Request is what a Service asks for.
type Request struct {
	Service ServiceKey
	// Policy and Primary come from spec.ipFamilyPolicy and ipFamilies[0].
	Policy  FamilyPolicy
	Primary Family
	// RequestedIPs from loadBalancerIPs or spec.loadBalancerIP: at most
	// one per family. When set, the book allocates exactly these.
	RequestedIPs []netip.Addr
	// Pool is the address-pool annotation ("" = none).
	Pool string
	// EligiblePools are the pools whose serviceAllocation admits the
	// Service, pools without serviceAllocation included: the caller
	// evaluates namespaces and selectors. Names the book does not know
	// are ignored.
	EligiblePools []string
	Sharing       SharingKey
	Ports         []Port
}

// clone copies the slices so the book never aliases caller memory, and
// sorts the ports for the overlap check.
func (r Request) clone() Request {
	r.RequestedIPs = slices.Clone(r.RequestedIPs)
	r.EligiblePools = slices.Clone(r.EligiblePools)
	r.Ports = slices.Clone(r.Ports)
	slices.SortFunc(r.Ports, Port.compare)
	return r
}

// cloneReusing is clone, but takes each slice equal to the one h's
// request has from h instead of copying it: a Service is most often
// decided again under the request it holds its addresses by, and the book
// never writes to a request's slices once it has them.
func (r Request) cloneReusing(h *holder) Request {
	if h == nil {
		return r.clone()
	}
	r.RequestedIPs = reuseOrClone(r.RequestedIPs, h.req.RequestedIPs)
	r.EligiblePools = reuseOrClone(r.EligiblePools, h.req.EligiblePools)
	if sameSlice(r.Ports, h.req.Ports) { // h's are sorted, so these are too
		r.Ports = h.req.Ports
	} else {
		r.Ports = slices.Clone(r.Ports)
		slices.SortFunc(r.Ports, Port.compare)
	}
	return r
}

// reuseOrClone returns held if it equals s, else a copy of s.
func reuseOrClone[T comparable](s, held []T) []T {
	if sameSlice(s, held) {
		return held
	}
	return slices.Clone(s)
}

// sameSlice reports whether a copy of s would equal held, nil or empty
// included: a copy of nil is nil, a copy of an empty slice is not.
func sameSlice[T comparable](s, held []T) bool {
	return (s == nil) == (held == nil) && slices.Equal(s, held)
}

func (r Request) eligible(pool string) bool {
	return slices.Contains(r.EligiblePools, pool)
}

// Assignment is what a Service holds: at most one address per family,
// IPv4 first, all from Pool. Pool is "" only for an assignment whose
// addresses are in no pool any more (see Book.Reconfigure).
type Assignment struct {
	Pool  string
	Addrs []netip.Addr
}

// Claim is an assignment found in a Service's status at startup, for
// Book.Restore.
type Claim struct {
	Request Request
	// Addrs from status.loadBalancer.ingress.
	Addrs []netip.Addr
	// Created orders claims: on a duplicate the earlier claim keeps the
	// address; ties fall back to the ServiceKey.
	Created time.Time
}

// Conflict is one address of one Service that the book refused to
// register (Restore) or found invalid (Reconfigure). Err matches the
// sentinel errors with errors.Is.
type Conflict struct {
	Service ServiceKey
	// Addr is the address concerned; zero when the whole claim is refused.
	Addr netip.Addr
	Err  error
}

// Move records a Service whose addresses now belong to a different pool
// after Reconfigure: its ip-allocated-from-pool annotation needs updating.
type Move struct {
	Service  ServiceKey
	From, To string
}
