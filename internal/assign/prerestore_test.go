package assign

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestPrerestore: a replay that starts from a Prerestore, fed the
// Services in another order than oldest first, decides exactly as the
// replay that restores oldest first; and it starts from the prerestored
// book only when no claim was refused, since otherwise the order decides
// which of two Services keeps an address.
func TestPrerestore(t *testing.T) {
	synthetic := syntheticCluster(1000) // shared addresses, records, reservations, pending Services, duplicates
	withoutDuplicates := synthetic
	withoutDuplicates.Services = slices.DeleteFunc(slices.Clone(synthetic.Services), func(s corev1.Service) bool {
		return strings.HasSuffix(s.Name, "077") // shows the previous Service's address
	})
	for i := range withoutDuplicates.Services {
		// The pairs' records hold their addresses shared, as the
		// controller writes them: otherwise one of each pair is refused.
		s := withoutDuplicates.Services[i].DeepCopy()
		key := s.Annotations["metallb.io/allow-shared-ip"]
		if key != "" && len(s.Status.LoadBalancer.Ingress) == 1 {
			s.Annotations[AnnotationAllocation] = fmt.Sprintf(`{"ips":[%q],"sharing":%q,"ports":["TCP/%d"]}`,
				s.Status.LoadBalancer.Ingress[0].IP, key, s.Spec.Ports[0].Port)
		}
		if key == "" && i%10 == 3 {
			// Ports out of order and no record, so that the claim holds
			// the ports the Service lists: the book sorts those it
			// holds, a decision reads them in the Service's order.
			s.Spec.Ports = append([]corev1.ServicePort{{Port: 8443, Protocol: corev1.ProtocolTCP}}, s.Spec.Ports...)
			delete(s.Annotations, AnnotationAllocation)
		}
		withoutDuplicates.Services[i] = *s
	}
	// Services showing addresses outside every pool (as after another
	// implementation): refused whatever the order, they lose them.
	outside := withoutDuplicates
	outside.Services = slices.Clone(withoutDuplicates.Services)
	for i := range outside.Services {
		if s := &outside.Services[i]; i%50 == 7 && len(s.Status.LoadBalancer.Ingress) == 1 {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("2001:db8:ffff::%x", i)}}
		}
	}
	// Listed by name, the younger Service comes first and would keep the
	// address both show; the barrier gives it to the older one.
	oppositeAges := Cluster{Pools: []v1beta1.IPAddressPool{replayPool("p", "192.0.2.0/30")}, Services: []corev1.Service{
		listed("a-young", 2, "192.0.2.1"), listed("b-pending", 3, ""), listed("z-old", 1, "192.0.2.1")}}
	tests := []struct {
		name    string
		cluster Cluster
		used    bool // the replay starts from the prerestored book
	}{
		{"no claim refused", withoutDuplicates, true},
		{"addresses outside every pool", outside, true},
		{"duplicates", synthetic, false},
		{"names sorting opposite to ages", oppositeAges, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Replay(tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if tt.used && !sharesAnAddress(want) {
				t.Fatal("no address is shared: the case does not show that shared addresses restore in any order")
			}
			if lost := countLost(want); tt.name == "addresses outside every pool" && lost == 0 {
				t.Fatal("no Service lost an address: the case does not show refusals kept from the Prerestore")
			}
			for _, order := range listingOrders(tt.cluster.Services) {
				c := tt.cluster
				p, err := NewPrerestore(c.Pools, c.Namespaces, c.LBClass)
				if err != nil {
					t.Fatal(err)
				}
				for _, svc := range order {
					p.Add(svc)
				}
				if (p.book != nil) != tt.used {
					t.Fatalf("after every Service was added, the book is usable: %v, want %v", p.book != nil, tt.used)
				}
				c.Prerestored = p
				got, err := Replay(c)
				if err != nil {
					t.Fatal(err)
				}
				if p.book != nil {
					t.Fatal("the replay did not take the prerestored book")
				}
				compareReplays(t, want, got)
			}
		})
	}
	r, _ := Replay(oppositeAges)
	if v, _ := r.Verdict(ipam.ServiceKey{Namespace: "ns", Name: "z-old"}); !slices.Equal(v.Addrs, []netip.Addr{netip.MustParseAddr("192.0.2.1")}) {
		t.Errorf("z-old, the older, decided %v; want the address both show", v.Addrs)
	}
}

// countLost counts the decisions for Services Restore refused an address.
func countLost(r *Replayed) int {
	n := 0
	for _, v := range r.Verdicts {
		if v.Step == StepLost && len(v.Refused) > 0 {
			n++
		}
	}
	return n
}

func sharesAnAddress(r *Replayed) bool {
	for _, v := range r.Verdicts {
		if len(v.Addrs) > 0 && len(r.Book.Holders(v.Addrs[0])) > 1 {
			return true
		}
	}
	return false
}

// TestPrerestoreIsUsedOnce: the replay's decisions change the book, so a
// second replay of the cluster restores its own.
func TestPrerestoreIsUsedOnce(t *testing.T) {
	c := Cluster{Pools: []v1beta1.IPAddressPool{replayPool("p", "192.0.2.0/30")}, Services: []corev1.Service{
		listed("a", 1, "192.0.2.1"), listed("b", 2, "")}}
	want, err := Replay(c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prerestored, err = NewPrerestore(c.Pools, c.Namespaces, c.LBClass); err != nil {
		t.Fatal(err)
	}
	for i := range c.Services {
		c.Prerestored.Add(&c.Services[i])
	}
	for range 2 {
		got, err := Replay(c)
		if err != nil {
			t.Fatal(err)
		}
		compareReplays(t, want, got)
	}
	// Services it was not given all of: restored in order.
	c.Prerestored, _ = NewPrerestore(c.Pools, c.Namespaces, c.LBClass)
	c.Prerestored.Add(&c.Services[0])
	if _, _, ok := c.Prerestored.take(c.Services); ok {
		t.Error("a Prerestore given one of two Services was taken")
	}
}

// listed is a Service of namespace ns created sec seconds after a fixed
// time, showing ip unless it is empty.
func listed(name string, sec int, ip string) corev1.Service {
	s := *service(func(s *corev1.Service) {
		s.Name = name
		s.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+sec), 0))
		if ip != "" {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		}
	})
	return s
}

// listingOrders are the orders a test feeds a Prerestore in: the API
// server's (namespace, then name), its reverse, and two shuffles.
func listingOrders(svcs []corev1.Service) [][]*corev1.Service {
	byName := make([]*corev1.Service, len(svcs))
	for i := range svcs {
		byName[i] = &svcs[i]
	}
	slices.SortFunc(byName, func(a, b *corev1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	reversed := slices.Clone(byName)
	slices.Reverse(reversed)
	orders := [][]*corev1.Service{byName, reversed}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2 {
		shuffled := slices.Clone(byName)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		orders = append(orders, shuffled)
	}
	return orders
}

// compareReplays compares two replays' decisions, reservations and books.
func compareReplays(t *testing.T, want, got *Replayed) {
	t.Helper()
	opts := []cmp.Option{cmpopts.IgnoreUnexported(Verdict{}), cmpopts.EquateComparable(netip.Addr{}), cmp.Comparer(sameError),
		cmpopts.EquateEmpty()}
	if diff := cmp.Diff(withRequests(want.Verdicts), withRequests(got.Verdicts), opts...); diff != "" {
		t.Errorf("decisions (-restored in order +prerestored):\n%s", diff)
	}
	if diff := cmp.Diff(want.Reservations, got.Reservations, opts...); diff != "" {
		t.Errorf("reservations (-restored in order +prerestored):\n%s", diff)
	}
	if diff := cmp.Diff(bookView(want.Book), bookView(got.Book), opts...); diff != "" {
		t.Errorf("book (-restored in order +prerestored):\n%s", diff)
	}
}

// bookView is what a book holds, through its exported methods.
func bookView(b *ipam.Book) map[string]any {
	held := map[ipam.ServiceKey]ipam.Assignment{}
	for _, k := range b.Services() {
		held[k], _ = b.Assigned(k)
	}
	return map[string]any{"held": held, "stats": b.AllStats()}
}
