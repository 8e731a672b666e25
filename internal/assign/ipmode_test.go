package assign

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/internal/ipam"
)

func TestParseIPMode(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        corev1.LoadBalancerIPMode
		wantErr     bool
	}{
		{"unset means VIP", nil, corev1.LoadBalancerIPModeVIP, false},
		{"VIP", map[string]string{AnnotationIPMode: "VIP"}, corev1.LoadBalancerIPModeVIP, false},
		{"Proxy", map[string]string{AnnotationIPMode: "Proxy"}, corev1.LoadBalancerIPModeProxy, false},
		{"spaces around", map[string]string{AnnotationIPMode: " Proxy "}, corev1.LoadBalancerIPModeProxy, false},
		{"wrong case", map[string]string{AnnotationIPMode: "proxy"}, "", true},
		{"empty", map[string]string{AnnotationIPMode: ""}, "", true},
		{"garbage", map[string]string{AnnotationIPMode: "DSR"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			got, err := parseIPMode(svc)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("parseIPMode = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ipam.ErrInvalidRequest) {
				t.Errorf("error %v does not wrap ErrInvalidRequest", err)
			}
		})
	}
}

func FuzzParseIPMode(f *testing.F) {
	for _, s := range []string{"VIP", "Proxy", "", " Proxy", "vip", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationIPMode: value}}}
		mode, err := parseIPMode(svc)
		if (err == nil) != (mode == corev1.LoadBalancerIPModeVIP || mode == corev1.LoadBalancerIPModeProxy) {
			t.Fatalf("parseIPMode(%q) = %q, %v", value, mode, err)
		}
	})
}
