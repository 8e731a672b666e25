package assign

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/internal/ipam"
)

func TestRecordRoundTrip(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8::7")}
	tests := []struct {
		name    string
		sharing ipam.SharingKey
		ports   []ipam.Port
		want    string
	}{
		{"no sharing records only the addresses", ipam.SharingKey{}, []ipam.Port{{Protocol: "TCP", Port: 80}},
			`{"ips":["198.51.100.7","2001:db8::7"]}`},
		{"sharing records key, backend and sorted ports", ipam.SharingKey{Sharing: "k", Backend: "app=web"},
			[]ipam.Port{{Protocol: "UDP", Port: 53}, {Protocol: "TCP", Port: 53}, {Protocol: "TCP", Port: 53}},
			`{"ips":["198.51.100.7","2001:db8::7"],"sharing":"k","backend":"app=web","ports":["TCP/53","UDP/53"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderRecord(addrs, tt.sharing, tt.ports)
			if got != tt.want {
				t.Fatalf("render = %s\nwant     %s", got, tt.want)
			}
			back, err := ParseRecord(got)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !slicesEqualAddrs(back.addrs, addrs) || back.sharing != tt.sharing {
				t.Errorf("parsed %+v", back)
			}
		})
	}
	if got := renderRecord(nil, ipam.SharingKey{Sharing: "k"}, nil); got != "" {
		t.Errorf("no addresses rendered %q, want nothing", got)
	}
}

func TestParseRecordErrors(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{`not json`, "is not valid"},
		{`{"ips":["198.51.100.300"]}`, `"198.51.100.300" is not an IP address`},
		{`{"ips":["fe80::1%eth0"]}`, "is not an IP address"},
		{`{"ips":[],"ports":["TCP"]}`, `port "TCP" is not PROTOCOL/NUMBER`},
		{`{"ips":[],"ports":["TCP/70000"]}`, "is not PROTOCOL/NUMBER"},
		{`{"ips":[],"extra":1}`, "unknown field"},
		{`{"ips":[]} {"ips":[]}`, "data after the record"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			_, err := ParseRecord(tt.value)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestClaimUsesTheRecord: a restart registers a Service under the terms
// its record names when the record matches the status, and under what its
// current spec says otherwise.
func TestClaimUsesTheRecord(t *testing.T) {
	alloc := newTestAllocator(t)
	svc := func(record, shows string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web",
			Annotations: map[string]string{"metallb.io/allow-shared-ip": "now", AnnotationAllocation: record}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: shows}}
		return s
	}
	recorded := `{"ips":["192.0.2.1"],"sharing":"then","ports":["TCP/80"]}`
	tests := []struct {
		name        string
		svc         *corev1.Service
		wantSharing string
		wantPorts   []ipam.Port
	}{
		{"record matches the status", svc(recorded, "192.0.2.1"), "then", []ipam.Port{{Protocol: "TCP", Port: 80}}},
		{"record names other addresses", svc(recorded, "192.0.2.2"), "now", []ipam.Port{{Protocol: "TCP", Port: 443}}},
		{"malformed record", svc("{", "192.0.2.1"), "now", []ipam.Port{{Protocol: "TCP", Port: 443}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := alloc.Claim(tt.svc, nil)
			if c.Request.Sharing.Sharing != tt.wantSharing {
				t.Errorf("sharing key %q, want %q", c.Request.Sharing.Sharing, tt.wantSharing)
			}
			if d := cmp.Diff(tt.wantPorts, c.Request.Ports); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
		})
	}
}

func slicesEqualAddrs(a, b []netip.Addr) bool {
	return cmp.Equal(a, b, cmp.Comparer(func(x, y netip.Addr) bool { return x == y }))
}

// FuzzParseRecord: any annotation value either parses into terms that
// render back to an equivalent record, or is refused; it never panics.
func FuzzParseRecord(f *testing.F) {
	f.Add(`{"ips":["198.51.100.7"],"sharing":"k","backend":"app=web","ports":["TCP/80"]}`)
	f.Add(`{"ips":["2001:db8::1","198.51.100.1"]}`)
	f.Add(`{"ips":null,"ports":["UDP/0"]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, value string) {
		terms, err := ParseRecord(value)
		if err != nil {
			return
		}
		again, err := ParseRecord(renderRecord(terms.addrs, terms.sharing, terms.ports))
		if len(terms.addrs) == 0 {
			return // nothing to record: rendering gives ""
		}
		if err != nil {
			t.Fatalf("re-parse of a rendered record: %v", err)
		}
		if !slicesEqualAddrs(again.addrs, terms.addrs) {
			t.Fatalf("addresses %v became %v", terms.addrs, again.addrs)
		}
	})
}

// FuzzPlainRecord: the decoder-free reading of the controller's plain form
// gives what the JSON decoder gives, and accepts nothing it refuses.
func FuzzPlainRecord(f *testing.F) {
	f.Add(`{"ips":["198.51.100.7"]}`)
	f.Add(`{"ips":["2001:db8::1","198.51.100.1"]}`)
	f.Add(`{"ips":["::ffff:198.51.100.1"]}`)
	f.Add(`{"ips":["198.51.100.7"],"sharing":"k"}`)
	f.Add(`{"ips":["fe80::1%eth0"]}`)
	f.Fuzz(func(t *testing.T, value string) {
		plain, ok := parsePlainRecord(value)
		if !ok {
			return
		}
		decoded, err := decodeRecord(value)
		if err != nil {
			t.Fatalf("read %v without the decoder, which refuses it: %v", plain.addrs, err)
		}
		if !slicesEqualAddrs(plain.addrs, decoded.addrs) || decoded.sharing != plain.sharing || len(decoded.ports) != 0 {
			t.Fatalf("without the decoder %+v, with it %+v", plain, decoded)
		}
		// Rendering without reflection writes what json.Marshal writes.
		r := record{}
		for _, a := range plain.addrs {
			r.IPs = append(r.IPs, a.String())
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := renderRecord(plain.addrs, ipam.SharingKey{}, nil); got != string(want) {
			t.Fatalf("rendered %s, json.Marshal gives %s", got, want)
		}
	})
}
