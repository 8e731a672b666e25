package assign

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestDecideEvents checks the events a decision carries, in particular that
// clearing an address is announced whether or not the book still held it:
// after a failed write the book follows the API server and may have let go.
func TestDecideEvents(t *testing.T) {
	team := labels.Set{"team": "a"}
	tests := []struct {
		name       string
		nsLabels   labels.Set
		shows      string // status.loadBalancer.ingress
		bookHolds  bool   // the book holds what the Service shows
		wantAddrs  []string
		wantEvents []string
	}{
		{"keeps what it holds", team, "192.0.2.1", true, []string{"192.0.2.1"}, nil},
		{"new address", team, "", false, []string{"192.0.2.0"}, []string{EventIPAllocated}},
		{"namespace no longer selected, book held it", nil, "192.0.2.1", true, nil,
			[]string{EventAllocationFailed, EventClearAssignment}},
		{"namespace no longer selected, book had let go", nil, "192.0.2.1", false, nil,
			[]string{EventAllocationFailed, EventClearAssignment}},
		{"never selected", nil, "", false, nil, []string{EventAllocationFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alloc := newTestAllocator(t)
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
			if tt.shows != "" {
				svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: tt.shows}}
			}
			if tt.bookHolds {
				if conflicts := alloc.book.Restore([]ipam.Claim{alloc.Claim(svc, team)}); len(conflicts) > 0 {
					t.Fatalf("restore: %v", conflicts)
				}
			}
			d := alloc.Decide(svc, tt.nsLabels)
			var addrs, reasons []string
			for _, a := range d.Addrs {
				addrs = append(addrs, a.String())
			}
			for _, e := range d.Events {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Equal(addrs, tt.wantAddrs) || !slices.Equal(reasons, tt.wantEvents) {
				t.Errorf("decided %v with events %v, want %v with %v", addrs, reasons, tt.wantAddrs, tt.wantEvents)
			}
		})
	}
}

// newTestAllocator has one pool, 192.0.2.0/30, for namespaces labelled
// team=a.
func newTestAllocator(t *testing.T) *Allocator {
	t.Helper()
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "metallb-system"},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"192.0.2.0/30"},
			ServiceAllocation: &v1beta1.ServiceAllocation{NamespaceSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"team": "a"}}}}}}
	cfg, err := config.Build(config.Snapshot{Pools: []v1beta1.IPAddressPool{*pool}})
	if err != nil {
		t.Fatalf("build config: %v", err)
	}
	book, err := ipam.New(ipamPools(cfg))
	if err != nil {
		t.Fatalf("new book: %v", err)
	}
	return &Allocator{book: book, cfg: cfg}
}

// assignedMessage and addrList build by hand what fmt wrote before; they
// must write the same.
func TestAssignedMessage(t *testing.T) {
	addrs := [][]netip.Addr{nil, {netip.MustParseAddr("198.51.100.1")},
		{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")}, {{}}}
	for _, as := range addrs {
		for _, pool := range []string{"", "big", `a"b`, "é\x00\n"} {
			s := make([]string, len(as))
			for i, a := range as {
				s[i] = a.String()
			}
			list := "[" + strings.Join(s, ",") + "]"
			if got := addrList(as); got != list {
				t.Errorf("addrList(%v) = %q, want %q", as, got, list)
			}
			want := fmt.Sprintf("assigned %s from pool %q", list, pool)
			if got := assignedMessage(ipam.Assignment{Addrs: as, Pool: pool}); got != want {
				t.Errorf("assignedMessage = %q, want %q", got, want)
			}
		}
	}
}
