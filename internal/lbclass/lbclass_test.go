package lbclass

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestOwns(t *testing.T) {
	lb := func(class *string) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class}}
	}
	tests := []struct {
		name    string
		svc     *corev1.Service
		lbClass string
		want    bool
	}{
		{"load balancer without class", lb(nil), "", true},
		{"cluster IP", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}, "", false},
		{"other class", lb(ptr.To("other")), "", false},
		{"our class", lb(ptr.To("ours")), "ours", true},
		{"another class when we have one", lb(ptr.To("other")), "ours", false},
		{"no class when we have one", lb(nil), "ours", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Owns(tt.svc, tt.lbClass); got != tt.want {
				t.Errorf("Owns = %v, want %v", got, tt.want)
			}
		})
	}
}
