package lbclass

import corev1 "k8s.io/api/core/v1"

// Owns reports whether a Service is ours: type LoadBalancer and, with
// lbClass empty, no spec.loadBalancerClass, else exactly that class.
func Owns(svc *corev1.Service, lbClass string) bool {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	if svc.Spec.LoadBalancerClass == nil {
		return lbClass == ""
	}
	return *svc.Spec.LoadBalancerClass == lbClass
}
