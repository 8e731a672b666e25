package assign

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/internal/ipam"
)

func TestParseLoadBalancerIPs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "192.0.2.1", want: []string{"192.0.2.1"}},
		{in: " 192.0.2.1 , 2001:db8::1 ", want: []string{"192.0.2.1", "2001:db8::1"}},
		{in: "::ffff:192.0.2.1", want: []string{"192.0.2.1"}},
		{in: "nonsense", wantErr: `annotation loadBalancerIPs: "nonsense" is not an IP address`},
		{in: "192.0.2.1,", wantErr: `annotation loadBalancerIPs: "" is not an IP address`},
		{in: "fe80::1%eth0", wantErr: `"fe80::1%eth0" is not an IP address`},
		{in: "192.0.2.1,192.0.2.2", wantErr: `lists two addresses of one family`},
		{in: "192.0.2.1,2001:db8::1,192.0.2.2", wantErr: `lists 3 addresses; at most 2, one per family`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLoadBalancerIPs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ipam.ErrInvalidRequest) {
					t.Fatalf("error = %v, want InvalidRequest containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			var strs []string
			for _, a := range got {
				strs = append(strs, a.String())
			}
			if diff := cmp.Diff(tt.want, strs); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseLoadBalancerIPs: any annotation value gives either an
// InvalidRequest error or one or two valid, unmapped addresses of distinct
// families, and never panics.
func FuzzParseLoadBalancerIPs(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "192.0.2.1,2001:db8::1", "", ",", "a,b,c", "::ffff:1.2.3.4", "1.2.3.4%x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addrs, err := ParseLoadBalancerIPs(s)
		if err != nil {
			if !errors.Is(err, ipam.ErrInvalidRequest) {
				t.Fatalf("error %v is not an InvalidRequest", err)
			}
			return
		}
		if len(addrs) == 0 || len(addrs) > 2 {
			t.Fatalf("%d addresses from %q", len(addrs), s)
		}
		for _, a := range addrs {
			if !a.IsValid() || a.Is4In6() || a.Zone() != "" {
				t.Fatalf("bad address %v from %q", a, s)
			}
		}
		if len(addrs) == 2 && addrs[0].Is4() == addrs[1].Is4() {
			t.Fatalf("two addresses of one family from %q", s)
		}
	})
}

func service(edits ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1"}}
	for _, e := range edits {
		e(s)
	}
	return s
}

func TestParseService(t *testing.T) {
	tests := []struct {
		name    string
		svc     *corev1.Service
		want    ipam.Request
		wantOld []string
		wantErr string
	}{
		{name: "defaults", svc: service(),
			want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4, Ports: []ipam.Port{}}},
		{name: "new prefix wins over old", svc: service(func(s *corev1.Service) {
			s.Annotations = map[string]string{"metallb.io/address-pool": "new", "metallb.universe.tf/address-pool": "old"}
		}), want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4, Pool: "new", Ports: []ipam.Port{}},
			wantOld: []string{"metallb.universe.tf/address-pool"}},
		{name: "old prefix is read and reported", svc: service(func(s *corev1.Service) {
			s.Annotations = map[string]string{"metallb.universe.tf/allow-shared-ip": "k"}
		}), want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4,
			Sharing: ipam.SharingKey{Sharing: "k"}, Ports: []ipam.Port{}},
			wantOld: []string{"metallb.universe.tf/allow-shared-ip"}},
		{name: "local traffic policy adds the backend key", svc: service(func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.Selector = map[string]string{"b": "2", "a": "1"}
			s.Spec.Ports = []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 80}}
		}), want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4,
			Sharing: ipam.SharingKey{Backend: "a=1,b=2"}, Ports: []ipam.Port{{Protocol: "UDP", Port: 53}, {Protocol: "TCP", Port: 80}}}},
		{name: "prefer dual stack with one cluster IP is single stack", svc: service(func(s *corev1.Service) {
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		}), want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv6, Ports: []ipam.Port{}}},
		{name: "require dual stack", svc: service(func(s *corev1.Service) {
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		}), want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4,
			Policy: ipam.RequireDualStack, Ports: []ipam.Port{}}},
		{name: "spec.loadBalancerIP", svc: service(func(s *corev1.Service) { s.Spec.LoadBalancerIP = "192.0.2.7" }),
			want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4,
				RequestedIPs: []netip.Addr{netip.MustParseAddr("192.0.2.7")}, Ports: []ipam.Port{}}},
		{name: "annotation and spec.loadBalancerIP", svc: service(func(s *corev1.Service) {
			s.Spec.LoadBalancerIP = "192.0.2.7"
			s.Annotations = map[string]string{"metallb.io/loadBalancerIPs": "192.0.2.8"}
		}), wantErr: "both the loadBalancerIPs annotation and spec.loadBalancerIP are set"},
		{name: "require dual stack without two cluster IPs", svc: service(func(s *corev1.Service) {
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		}), wantErr: "not enough clusterips"},
		{name: "an unreadable address still yields the sharing terms", svc: service(func(s *corev1.Service) {
			s.Annotations = map[string]string{"metallb.io/loadBalancerIPs": "not-an-ip", "metallb.io/allow-shared-ip": "k"}
			s.Spec.Ports = []corev1.ServicePort{{Port: 443}}
		}), want: ipam.Request{Service: ipam.ServiceKey{Namespace: "ns", Name: "svc"}, Primary: ipam.IPv4,
			Sharing: ipam.SharingKey{Sharing: "k"}, Ports: []ipam.Port{{Protocol: "TCP", Port: 443}}},
			wantErr: `"not-an-ip" is not an IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseService(tt.svc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if tt.want.Service.Name == "" {
					return
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Request, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOld, got.deprecated); diff != "" {
				t.Errorf("deprecated annotations (-want +got):\n%s", diff)
			}
		})
	}
}
