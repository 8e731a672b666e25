package assign

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationIPMode chooses status.loadBalancer.ingress[].ipMode (KEP-1860):
// VIP (the default) tells kube-proxy to route the address to the Service
// on the node itself; Proxy tells it to leave the address alone, for
// load balancers that forward to the nodes rather than answer for the
// address.
const AnnotationIPMode = "steadylb.io/ip-mode"

// parseIPMode reads the ip-mode annotation; an unset annotation means VIP.
// Errors wrap ipam.ErrInvalidRequest and name the annotation.
func parseIPMode(svc *corev1.Service) (corev1.LoadBalancerIPMode, error) {
	value, ok := svc.Annotations[AnnotationIPMode]
	if !ok {
		return corev1.LoadBalancerIPModeVIP, nil
	}
	switch mode := corev1.LoadBalancerIPMode(strings.TrimSpace(value)); mode {
	case corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy:
		return mode, nil
	}
	return "", fmt.Errorf("%w: annotation %s %q is neither %s nor %s", errInvalidService, AnnotationIPMode, value,
		corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy)
}
