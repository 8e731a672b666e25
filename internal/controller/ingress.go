package controller

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// effectiveIPMode is how an ingress entry behaves: KEP-1860 defines an
// unset ipMode as VIP.
func effectiveIPMode(in corev1.LoadBalancerIngress) corev1.LoadBalancerIPMode {
	if in.IPMode == nil {
		return corev1.LoadBalancerIPModeVIP
	}
	return *in.IPMode
}

// ingress renders addresses as status.loadBalancer.ingress, keeping any
// fields (ports, hostname) already there for an address that stays. mode
// "" keeps each entry's ipMode as it is, for a decision that could not read
// the request. An entry without ipMode is left without one when the mode
// is VIP: it already behaves as VIP, and rewriting it would turn the first
// start of this version into a write to every Service.
func ingress(current []corev1.LoadBalancerIngress, addrs []netip.Addr, mode corev1.LoadBalancerIPMode) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	for _, a := range addrs {
		entry, found := corev1.LoadBalancerIngress{IP: a.String()}, false
		for _, c := range current {
			if c.IP == entry.IP {
				entry, found = *c.DeepCopy(), true
			}
		}
		if mode != "" && (!found || effectiveIPMode(entry) != mode) {
			entry.IPMode = &mode
		}
		out = append(out, entry)
	}
	return out
}
