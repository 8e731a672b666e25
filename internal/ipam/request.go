package ipam

import (
	"net/netip"
)

// checkBasics validates the parts of a request every operation needs.
func checkBasics(req Request) error {
	switch {
	case req.Service.Name == "":
		return errorf(ErrInvalidRequest, "service name is empty")
	case req.Primary != IPv4 && req.Primary != IPv6:
		return errorf(ErrInvalidRequest, "service %s has no IP family", req.Service)
	case req.Policy > RequireDualStack:
		return errorf(ErrInvalidRequest, "service %s has an unknown IP family policy", req.Service)
	}
	return nil
}

// checkRequest validates a request for Allocate: the basics, and that the
// requested IPs are well formed, at most one per family, and of the
// families the policy allows. Under PreferDualStack one address of either
// family is accepted (MetalLB insists on both when the Service has two
// ClusterIPs; accepting one is strictly more lenient).
func checkRequest(req Request) error {
	if err := checkBasics(req); err != nil {
		return err
	}
	var seen [2]netip.Addr
	for _, a := range req.RequestedIPs {
		if err := checkAddr("requested IP", a); err != nil {
			return err
		}
		f := FamilyOf(a)
		if prev := seen[f.slot()]; prev.IsValid() {
			return errorf(ErrInvalidRequest, "more than one %s address requested (%s and %s)", f, prev, a)
		}
		seen[f.slot()] = a
		if !req.Policy.wants(req.Primary, f) {
			return errorf(ErrFamilyMismatch, "requested IP %s is %s, but the service is single-stack %s", a, f, req.Primary)
		}
	}
	if req.Policy == RequireDualStack && len(req.RequestedIPs) == 1 {
		a := req.RequestedIPs[0]
		return errorf(ErrFamilyMismatch, "the service requires dual stack, but only the %s address %s is requested", FamilyOf(a), a)
	}
	return nil
}

// checkAddr rejects addresses the book cannot key reliably.
func checkAddr(what string, a netip.Addr) error {
	switch {
	case !a.IsValid():
		return errorf(ErrInvalidRequest, "%s is not a valid address", what)
	case a.Zone() != "":
		return errorf(ErrInvalidRequest, "%s %s has an IPv6 zone", what, a)
	case a.Is4In6():
		return errorf(ErrInvalidRequest, "%s %s is an IPv4-mapped IPv6 address; use plain IPv4", what, a)
	}
	return nil
}

// noRoomError explains why no pool in tried could serve req: either no
// pool has the families at all (NoMatchingPool) or they are full
// (PoolExhausted).
func noRoomError(req *Request, tried []*pool, pinned bool) error {
	var need []Family
	var what, join string
	switch req.Policy {
	case SingleStack:
		need, what = []Family{req.Primary}, req.Primary.String()
	case RequireDualStack:
		need, what, join = families[:], "IPv4 and IPv6", "all"
	default:
		need, what, join = families[:], "IPv4 or IPv6", "any"
	}
	var having []string
	for _, p := range tried {
		if hasFamilies(p, need, join == "any") {
			having = append(having, p.cfg.Name)
		}
	}
	if len(having) > 0 {
		return errorf(ErrPoolExhausted, "no available %s addresses in %s", what, poolsPhrase(having))
	}
	if pinned {
		return errorf(ErrNoMatchingPool, "pool %q has no %s addresses", tried[0].cfg.Name, what)
	}
	return errorf(ErrNoMatchingPool, "no address pool available to this service has %s addresses", what)
}

func hasFamilies(p *pool, fams []Family, anyOf bool) bool {
	for _, f := range fams {
		has := !p.total[f.slot()].isZero()
		if has == anyOf {
			return anyOf
		}
	}
	return !anyOf
}
