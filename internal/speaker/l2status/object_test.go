package l2status

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
)

func object(annotations map[string]string) *v1beta1.ServiceL2Status {
	return &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
}

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestAddresses(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")
	tests := []struct {
		name     string
		obj      *v1beta1.ServiceL2Status
		want     []netip.Addr
		wantSays bool
	}{
		{"MetalLB's object says nothing", object(nil), nil, false},
		{"an empty list", object(map[string]string{AnnotationAddresses: ""}), nil, true},
		{"one address", object(map[string]string{AnnotationAddresses: "198.51.100.1"}), []netip.Addr{v4}, true},
		{"sorted, deduplicated, unmapped", object(map[string]string{AnnotationAddresses: "2001:db8::1, ::ffff:198.51.100.1,198.51.100.1"}),
			[]netip.Addr{v4, v6}, true},
		{"garbage says nothing", object(map[string]string{AnnotationAddresses: "198.51.100.1,not-an-ip"}), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, says := Addresses(tt.obj)
			if diff := cmp.Diff(tt.want, got, addrCmp); diff != "" || says != tt.wantSays {
				t.Errorf("Addresses = %v, %v; want %v, %v", got, says, tt.want, tt.wantSays)
			}
		})
	}
}

func TestServiceAndNodeOf(t *testing.T) {
	st := &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		v1beta1.LabelServiceNamespace: "shop", v1beta1.LabelServiceName: "web"}},
		Status: v1beta1.MetalLBServiceL2Status{Node: "from-status"}}
	svc, ok := ServiceOf(st)
	if !ok || svc.String() != "shop/web" {
		t.Errorf("ServiceOf = %v, %v; want shop/web", svc, ok)
	}
	if n := NodeOf(st); n != "from-status" {
		t.Errorf("NodeOf without the label = %q, want status.node", n)
	}
	st.Labels[v1beta1.LabelNode] = "from-label"
	if n := NodeOf(st); n != "from-label" {
		t.Errorf("NodeOf = %q, want the label", n)
	}
	delete(st.Labels, v1beta1.LabelServiceName)
	if _, ok := ServiceOf(st); ok {
		t.Error("ServiceOf found a Service without the name label")
	}
}

// FuzzAddresses: the annotation is written by other nodes and anyone with
// write access; whatever it holds, parsing never panics, and what parses
// formats back to itself.
func FuzzAddresses(f *testing.F) {
	for _, seed := range []string{"", "198.51.100.1", "2001:db8::1,198.51.100.1", " , ", "::ffff:1.2.3.4", "1.2.3.4,1.2.3.4", "fe80::1%eth0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		addrs, ok := parseAddresses(v)
		if !ok {
			return
		}
		again, ok := parseAddresses(formatAddresses(addrs))
		if !ok {
			t.Fatalf("formatted %v does not parse", addrs)
		}
		if diff := cmp.Diff(addrs, again, addrCmp); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
