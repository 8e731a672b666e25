package controller

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestIngress(t *testing.T) {
	vip, proxy := corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	tests := []struct {
		name    string
		current []corev1.LoadBalancerIngress
		addrs   []netip.Addr
		mode    corev1.LoadBalancerIPMode
		want    []corev1.LoadBalancerIngress
	}{
		{"new address gets VIP", nil, []netip.Addr{a}, vip,
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &vip}}},
		{"new address gets Proxy", nil, []netip.Addr{a}, proxy,
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &proxy}}},
		{"an entry without ipMode already is VIP", []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}, []netip.Addr{a}, vip,
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}},
		{"an entry without ipMode turns Proxy", []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}, []netip.Addr{a}, proxy,
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &proxy}}},
		{"Proxy back to VIP", []corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &proxy}}, []netip.Addr{a}, vip,
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &vip}}},
		{"unreadable request keeps each entry's mode",
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &proxy}, {IP: "2001:db8::1"}}, []netip.Addr{a, b}, "",
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &proxy}, {IP: "2001:db8::1"}}},
		{"ports of a staying entry are kept",
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}}},
			[]netip.Addr{a}, proxy,
			[]corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: &proxy, Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}}}},
		{"a dropped address goes", []corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: ptr.To(vip)}}, nil, vip, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []corev1.LoadBalancerIngress
			for _, c := range tt.current {
				before = append(before, *c.DeepCopy())
			}
			got := ingress(tt.current, tt.addrs, tt.mode)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ingress (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.current); diff != "" {
				t.Errorf("ingress changed its input (-before +after):\n%s", diff)
			}
		})
	}
}
