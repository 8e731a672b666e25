package assign

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// ShowsAddress and showsExactly stand in for StatusAddresses where the
// startup barrier asks of every Service; they must answer as the list
// would, whatever the ingress holds.
func TestShownAddresses(t *testing.T) {
	tests := []struct {
		ingress, addrs string // comma-separated; "-" is an empty entry
	}{
		{"", ""},
		{"", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::1"},
		{"2001:db8::1", "2001:db8::2"},
		{"2001:db8::1", ""},
		{"2001:db8::1", "2001:db8::1,198.51.100.1"},
		{"::ffff:198.51.100.1", "198.51.100.1"},
		{"nonsense", ""},
		{"nonsense", "198.51.100.1"},
		{"-", ""},
		{"2001:db8::1,198.51.100.1", "198.51.100.1,2001:db8::1"},
		{"2001:db8::1,2001:db8::1", "2001:db8::1"},
		{"nonsense,198.51.100.1", "198.51.100.1"},
		{"nonsense,nonsense", ""},
	}
	for _, tt := range tests {
		t.Run(tt.ingress+"/"+tt.addrs, func(t *testing.T) {
			checkShown(t, split(tt.ingress), split(tt.addrs))
		})
	}
}

func FuzzShownAddresses(f *testing.F) {
	f.Add("2001:db8::1", "", "2001:db8::1")
	f.Add("198.51.100.1", "2001:db8::1", "198.51.100.1")
	f.Add("::ffff:198.51.100.1", "", "198.51.100.1")
	f.Add("x", "", "")
	f.Fuzz(func(t *testing.T, in1, in2, addr string) {
		ingress := []string{in1}
		if in2 != "" {
			ingress = append(ingress, in2)
		}
		checkShown(t, ingress, []string{addr})
	})
}

// checkShown compares the shortcuts with StatusAddresses for a Service
// whose ingress holds the given IPs, asked about the parsable ones of
// addrs (sorted, as the book keeps them).
func checkShown(t *testing.T, ingress, addrs []string) {
	t.Helper()
	svc := &corev1.Service{}
	for _, ip := range ingress {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	var want []netip.Addr
	for _, s := range addrs {
		if a, err := netip.ParseAddr(s); err == nil {
			want = append(want, a)
		}
	}
	slices.SortFunc(want, netip.Addr.Compare)
	shown := StatusAddresses(svc)
	if got := ShowsAddress(svc); got != (len(shown) > 0) {
		t.Errorf("ShowsAddress = %v, StatusAddresses = %v", got, shown)
	}
	if got := showsExactly(svc, want); got != slices.Equal(want, shown) {
		t.Errorf("showsExactly(%v) = %v, StatusAddresses = %v", want, got, shown)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.Split(s, ",")
	for i, p := range out {
		if p == "-" {
			out[i] = ""
		}
	}
	return out
}
