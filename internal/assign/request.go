package assign

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/ipam"
)

// Service annotations, MetalLB's names. Each is read under both prefixes;
// the current one wins.
const (
	prefix           = "metallb.io/"
	deprecatedPrefix = "metallb.universe.tf/"

	annotationLoadBalancerIPs = "loadBalancerIPs"
	annotationAddressPool     = "address-pool"
	annotationAllowSharedIP   = "allow-shared-ip"

	// AnnotationAllocatedFromPool is written by the controller: the pool
	// the Service's addresses came from.
	AnnotationAllocatedFromPool = prefix + "ip-allocated-from-pool"
)

// errInvalidService wraps every problem found in a Service's own spec or
// annotations; it maps to the InvalidRequest reason.
var errInvalidService = ipam.ErrInvalidRequest

// serviceRequest is a Service's request in the address book's terms, plus
// what the controller must tell the user about how it was expressed.
type serviceRequest struct {
	ipam.Request
	// deprecated lists annotations read under the old prefix.
	deprecated []string
	// ipMode is what every ingress entry should say.
	ipMode corev1.LoadBalancerIPMode
}

// annotationKeys are the MetalLB annotations a Service's request reads,
// under the current and the deprecated prefix, joined once rather than on
// every read of every Service.
var annotationKeys = func() map[string][2]string {
	out := map[string][2]string{}
	for _, name := range []string{annotationLoadBalancerIPs, annotationAddressPool, annotationAllowSharedIP} {
		out[name] = [2]string{prefix + name, deprecatedPrefix + name}
	}
	return out
}()

// annotation returns the value of a MetalLB annotation, preferring the
// metallb.io/ prefix, and whether the deprecated prefix is set too, used
// or not: MetalLB warns about it either way.
func annotation(svc *corev1.Service, name string) (value string, deprecated bool) {
	keys, ok := annotationKeys[name]
	if !ok {
		keys = [2]string{prefix + name, deprecatedPrefix + name}
	}
	old, hasOld := svc.Annotations[keys[1]]
	if v, ok := svc.Annotations[keys[0]]; ok {
		return v, hasOld
	}
	return old, hasOld
}

// parseService reads what a Service asks for. EligiblePools is left for the
// caller, which knows the pools and the namespace. Errors wrap
// ipam.ErrInvalidRequest and name the field at fault; with an error the
// request still carries every part that could be read (families, pool,
// sharing key, ports), which is what a restart needs to register the
// addresses the Service holds.
func parseService(svc *corev1.Service) (serviceRequest, error) {
	r := serviceRequest{}
	r.Service = ipam.ServiceKey{Namespace: svc.Namespace, Name: svc.Name}
	read := func(name string) string {
		v, old := annotation(svc, name)
		if old {
			r.deprecated = append(r.deprecated, annotationKeys[name][1])
		}
		return v
	}

	var famErr, ipErr, modeErr error
	r.Policy, r.Primary, famErr = families(svc)
	r.RequestedIPs, ipErr = requestedIPs(svc, read(annotationLoadBalancerIPs))
	r.Pool = strings.TrimSpace(read(annotationAddressPool))
	r.Sharing = ipam.SharingKey{Sharing: read(annotationAllowSharedIP), Backend: backendKey(svc)}
	r.Ports = ports(svc)
	r.ipMode, modeErr = parseIPMode(svc)
	return r, cmp.Or(famErr, ipErr, modeErr)
}

// families maps spec.ipFamilyPolicy and spec.ipFamilies to the book's
// policy. A PreferDualStack Service with a single ClusterIP gets only that
// family (MetalLB does the same); RequireDualStack without two ClusterIPs is
// an error MetalLB reports as "not enough clusterips".
func families(svc *corev1.Service) (ipam.FamilyPolicy, ipam.Family, error) {
	primary := ipam.IPv4
	if len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
		primary = ipam.IPv6
	} else if len(svc.Spec.IPFamilies) == 0 && isIPv6(svc.Spec.ClusterIP) {
		primary = ipam.IPv6
	}
	if svc.Spec.IPFamilyPolicy == nil {
		return ipam.SingleStack, primary, nil
	}
	dual := len(svc.Spec.ClusterIPs) > 1 || len(svc.Spec.IPFamilies) > 1
	switch *svc.Spec.IPFamilyPolicy {
	case corev1.IPFamilyPolicyPreferDualStack:
		if dual {
			return ipam.PreferDualStack, primary, nil
		}
		return ipam.SingleStack, primary, nil
	case corev1.IPFamilyPolicyRequireDualStack:
		if !dual {
			return 0, primary, fmt.Errorf("%w: spec.ipFamilyPolicy is RequireDualStack but the service has %d ClusterIP family: %w",
				errInvalidService, len(svc.Spec.IPFamilies), errNotEnoughClusterIPs)
		}
		return ipam.RequireDualStack, primary, nil
	}
	return ipam.SingleStack, primary, nil
}

// errNotEnoughClusterIPs marks the RequireDualStack error that earns
// MetalLB's "not enough clusterips" event.
var errNotEnoughClusterIPs = errors.New("not enough clusterips")

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

// requestedIPs combines the loadBalancerIPs annotation and the deprecated
// spec.loadBalancerIP, which are exclusive.
func requestedIPs(svc *corev1.Service, fromAnnotation string) ([]netip.Addr, error) {
	specIP := strings.TrimSpace(svc.Spec.LoadBalancerIP)
	switch {
	case fromAnnotation != "" && specIP != "":
		return nil, fmt.Errorf("%w: both the loadBalancerIPs annotation and spec.loadBalancerIP are set; use one", errInvalidService)
	case specIP != "":
		a, err := netip.ParseAddr(specIP)
		if err != nil {
			return nil, fmt.Errorf("%w: spec.loadBalancerIP %q is not an IP address", errInvalidService, specIP)
		}
		return []netip.Addr{a.Unmap()}, nil
	case fromAnnotation != "":
		return ParseLoadBalancerIPs(fromAnnotation)
	}
	return nil, nil
}

// ParseLoadBalancerIPs parses the loadBalancerIPs annotation: one or two
// comma-separated addresses, at most one per family. Errors wrap
// ipam.ErrInvalidRequest.
func ParseLoadBalancerIPs(value string) ([]netip.Addr, error) {
	parts := strings.Split(value, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%w: annotation loadBalancerIPs %q lists %d addresses; at most 2, one per family",
			errInvalidService, value, len(parts))
	}
	addrs := make([]netip.Addr, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		a, err := netip.ParseAddr(p)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%w: annotation loadBalancerIPs: %q is not an IP address", errInvalidService, p)
		}
		addrs = append(addrs, a.Unmap())
	}
	if len(addrs) == 2 && addrs[0].Is4() == addrs[1].Is4() {
		return nil, fmt.Errorf("%w: annotation loadBalancerIPs %q lists two addresses of one family",
			errInvalidService, value)
	}
	return addrs, nil
}

// backendKey is the part of the sharing key that keeps Services with
// externalTrafficPolicy Local on one address only when they select the same
// pods: traffic for a shared address reaches one node.
func backendKey(svc *corev1.Service) string {
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return ""
	}
	return labels.Set(svc.Spec.Selector).String()
}

func ports(svc *corev1.Service) []ipam.Port {
	out := make([]ipam.Port, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		out = append(out, ipam.Port{Protocol: proto, Port: p.Port})
	}
	return out
}

// Key is the name the book knows a Service by.
func Key(svc *corev1.Service) ipam.ServiceKey {
	return ipam.ServiceKey{Namespace: svc.Namespace, Name: svc.Name}
}

// StatusAddresses reads the addresses a Service holds according to its
// status. Hostnames and unparsable entries are ignored: we never write them.
func StatusAddresses(svc *corev1.Service) []netip.Addr {
	ingress := svc.Status.LoadBalancer.Ingress
	if len(ingress) == 0 {
		return nil
	}
	out := make([]netip.Addr, 0, len(ingress))
	for _, in := range ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, a.Unmap())
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// showsExactly reports whether StatusAddresses(svc) equals addrs (sorted,
// as the book and records keep them), without building the list for the
// usual single entry.
func showsExactly(svc *corev1.Service, addrs []netip.Addr) bool {
	if ingress := svc.Status.LoadBalancer.Ingress; len(ingress) == 1 {
		a, err := netip.ParseAddr(ingress[0].IP)
		if err != nil {
			return len(addrs) == 0
		}
		return len(addrs) == 1 && addrs[0] == a.Unmap()
	}
	return slices.Equal(addrs, StatusAddresses(svc))
}

// ShowsAddress reports whether StatusAddresses would name any address,
// without building the list: the startup barrier asks it of every Service.
func ShowsAddress(svc *corev1.Service) bool {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if _, err := netip.ParseAddr(in.IP); err == nil {
			return true
		}
	}
	return false
}
