package peerjoin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(node string, edits ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}}
	for _, e := range edits {
		e(&p)
	}
	return p
}

func ips(ips ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
	}
}

func podIP(ip string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.PodIP = ip } }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }

func TestPeerAddresses(t *testing.T) {
	tests := []struct {
		name string
		pods []corev1.Pod
		port int
		want []string
	}{
		{"none", nil, 7946, nil},
		{"own pod left out", []corev1.Pod{pod("self", ips("198.51.100.1")), pod("b", ips("198.51.100.2"))}, 7946,
			[]string{"198.51.100.2:7946"}},
		{"dual stack, sorted, with port", []corev1.Pod{pod("c", ips("198.51.100.3", "2001:db8::3")), pod("b", ips("198.51.100.2"))}, 7946,
			[]string{"198.51.100.2:7946", "198.51.100.3:7946", "[2001:db8::3]:7946"}},
		{"podIP when podIPs is empty", []corev1.Pod{pod("b", podIP("198.51.100.2"))}, 0, []string{"198.51.100.2"}},
		{"deleted pod left out", []corev1.Pod{pod("b", ips("198.51.100.2"), deleting)}, 7946, nil},
		{"duplicates once", []corev1.Pod{pod("b", ips("198.51.100.2")), pod("c", ips("198.51.100.2"))}, 0, []string{"198.51.100.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, peerAddresses(tt.pods, "self", tt.port)); diff != "" {
				t.Errorf("peerAddresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatters(t *testing.T) {
	base := pod("b", ips("198.51.100.2"))
	tests := []struct {
		name string
		new  corev1.Pod
		want bool
	}{
		{"same", pod("b", ips("198.51.100.2")), false},
		{"label-only change", pod("b", ips("198.51.100.2"), func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }), false},
		{"new IP", pod("b", ips("198.51.100.3")), true},
		{"IP added", pod("b", ips("198.51.100.2", "2001:db8::2")), true},
		{"being deleted", pod("b", ips("198.51.100.2"), deleting), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matters(&base, &tt.new); got != tt.want {
				t.Errorf("Matters = %v, want %v", got, tt.want)
			}
		})
	}
}
