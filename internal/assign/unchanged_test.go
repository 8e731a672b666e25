package assign

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestKeptUnchanged: the kept Services a replay decides together, on two
// goroutines, get the decisions a replay that takes them one by one gives
// them, the replays end with the same book and reservations, and the run
// ends at the first kept Service by age (names sort the other way) whose
// decision changes the book: its own and every later decision are taken
// in order.
func TestKeptUnchanged(t *testing.T) {
	const n = 40 // kept Services in the settled cluster; the second goroutine takes the youngest 20
	// Chunks are split between the goroutines one after another: a change
	// in the second half of the second.
	manyKept := settledClusterIn("2001:db8:1::/112", func(i int) string { return fmt.Sprintf("2001:db8:1::%x", i+1) },
		2*keptChunk, func(_ *Cluster, s *corev1.Service, rank int) {
			if rank == keptChunk+keptChunk/2+7 {
				s.Spec.LoadBalancerIP = "2001:db8:1::ffff"
			}
		})
	tests := []struct {
		name    string
		cluster Cluster
		// together is how many kept Services are decided together; -1:
		// not checked.
		together int
	}{
		{"settled", settledCluster(n), n},
		{"a new address requested by the third oldest", settledCluster(n, requestsAnother(2)), 2},
		{"a new address requested by the oldest of the second half", settledCluster(n, requestsAnother(n/2)), n / 2},
		{"a new address requested by the third youngest", settledCluster(n, requestsAnother(n-3)), n - 3},
		{"ports out of order", settledCluster(n, portsReversed), n},
		{"a request that cannot be read keeps what it holds", settledCluster(n, unreadable(5)), n},
		{"a family to add to the fifth oldest", settledCluster(n, dualStackPool, preferDualStack(4)), 4},
		{"an address given up goes to a younger Service", settledCluster(n, dualStackPool, movesOffIPv6(2), preferDualStack(6)), 2},
		{"a new address requested in the second chunk", manyKept, keptChunk + keptChunk/2 + 7},
		{"synthetic", syntheticCluster(1000), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decideKeptTogether = false
			want, err := Replay(tt.cluster)
			decideKeptTogether = true
			if err != nil {
				t.Fatal(err)
			}
			got, err := Replay(tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if want.keptTogether != 0 {
				t.Fatalf("the replay one by one decided %d together", want.keptTogether)
			}
			if tt.together >= 0 && got.keptTogether != tt.together {
				t.Errorf("%d kept Services decided together, want %d", got.keptTogether, tt.together)
			}
			if tt.together < 0 && got.keptTogether == 0 {
				t.Error("no kept Service was decided together: the case shows nothing")
			}
			compareReplays(t, want, got)
		})
	}
	// The case above shows an order: from the book the replay started
	// with, the younger Service would get another IPv6 address.
	r, _ := Replay(settledCluster(n, dualStackPool, movesOffIPv6(2), preferDualStack(6)))
	if v, _ := r.Verdict(ipam.ServiceKey{Namespace: "ns", Name: fmt.Sprintf("svc-%05d", n-1-6)}); !slices.Contains(v.Addrs, netip.MustParseAddr("2001:db8::")) {
		t.Errorf("the younger Service got %v, not the address the older one gave up", v.Addrs)
	}
}

// settledCluster is a cluster as the controller leaves it: n Services
// showing an address of pool p each, with the record the controller
// writes, created a second apart, the oldest named last; each edit is
// given every Service and its age rank (0: the oldest).
func settledCluster(n int, edits ...func(c *Cluster, s *corev1.Service, rank int)) Cluster {
	return settledClusterIn("198.51.100.0/24", func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) }, n, edits...)
}

// settledClusterIn is settledCluster with pool p's range and the address
// of each Service by age rank.
func settledClusterIn(pool string, addr func(int) string, n int, edits ...func(c *Cluster, s *corev1.Service, rank int)) Cluster {
	c := Cluster{Pools: []v1beta1.IPAddressPool{replayPool("p", pool)}}
	for i := range n {
		ip := addr(i)
		s := *service(func(s *corev1.Service) {
			s.Name = fmt.Sprintf("svc-%05d", n-1-i)
			if netip.MustParseAddr(ip).Is6() {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
			}
			s.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+i), 0))
			s.Spec.Ports = []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}
			s.Annotations = map[string]string{AnnotationAllocatedFromPool: "p", AnnotationAllocation: `{"ips":["` + ip + `"]}`}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		})
		c.Services = append(c.Services, s)
	}
	for i := range c.Services {
		for _, edit := range edits {
			edit(&c, &c.Services[i], i)
		}
	}
	return c
}

// requestsAnother makes the Service of age rank ask for a free address.
func requestsAnother(rank int) func(*Cluster, *corev1.Service, int) {
	return func(_ *Cluster, s *corev1.Service, r int) {
		if r == rank {
			s.Spec.LoadBalancerIP = "198.51.100.250"
		}
	}
}

// portsReversed gives every Service two ports, the higher first: the book
// holds them sorted.
func portsReversed(_ *Cluster, s *corev1.Service, _ int) {
	s.Spec.Ports = []corev1.ServicePort{{Port: 443, Protocol: corev1.ProtocolTCP}, {Port: 80, Protocol: corev1.ProtocolTCP}}
}

// unreadable gives the Service of age rank a malformed annotation.
func unreadable(rank int) func(*Cluster, *corev1.Service, int) {
	return func(_ *Cluster, s *corev1.Service, r int) {
		if r == rank {
			s.Annotations["metallb.io/loadBalancerIPs"] = "not-an-address"
		}
	}
}

// movesOffIPv6 makes the Service of age rank an IPv6 one showing the
// lowest IPv6 address of the pool, and asking for another: its decision
// gives the lowest up.
func movesOffIPv6(rank int) func(*Cluster, *corev1.Service, int) {
	return func(_ *Cluster, s *corev1.Service, r int) {
		if r == rank {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
			s.Spec.LoadBalancerIP = "2001:db8::80"
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "2001:db8::"}}
			s.Annotations[AnnotationAllocation] = `{"ips":["2001:db8::"]}`
		}
	}
}

// dualStackPool adds IPv6 to pool p.
func dualStackPool(c *Cluster, _ *corev1.Service, _ int) {
	c.Pools[0].Spec.Addresses = []string{"198.51.100.0/24", "2001:db8::/120"}
}

// preferDualStack makes the Service of age rank prefer two families: it
// holds one, and the pool has the other.
func preferDualStack(rank int) func(*Cluster, *corev1.Service, int) {
	return func(_ *Cluster, s *corev1.Service, r int) {
		if r == rank {
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		}
	}
}
