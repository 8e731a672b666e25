package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestReservationViews: reserved addresses show in every view: counted
// apart in pools, listed with their reservation in addresses and kept out
// of the free spans, and named in explain for the Service they keep out
// and the one they are kept for.
func TestReservationViews(t *testing.T) {
	now := time.Unix(10000, 0)
	until := metav1.NewTime(now.Add(time.Hour))
	cluster := assign.Cluster{
		Pools: []v1beta1.IPAddressPool{
			pool("web", []string{"198.51.100.0/30"}),
			pool("other", []string{"203.0.113.0/32"}, func(p *v1beta1.IPAddressPool) {
				p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{Namespaces: []string{"red"}}
			}),
		},
		Services: []corev1.Service{
			*svc("a", shows("198.51.100.0")),
			*svc("b", shows("198.51.100.1")),
			*svc("web"),
			*svc("lateone"),
			*svc("elsewhere"),
		},
		Reservations: []v1alpha1.AddressReservation{
			reservation("keep-future", "future", nil, "198.51.100.2"),
			reservation("retained-gone", "gone", &until, "198.51.100.3"),
			reservation("keep-web", "web", nil, "198.51.100.3"),
			reservation("keep-elsewhere", "elsewhere", nil, "203.0.113.0"),
		},
		Now: now,
	}
	s, err := NewState(cluster, KeepAll)
	if err != nil {
		t.Fatal(err)
	}

	type count struct{ Pool, Assigned, Reserved, Retained, Free string }
	var counts []count
	for _, r := range s.Pools() {
		counts = append(counts, count{r.Pool, r.Assigned, r.Reserved, r.Retained, r.Free})
	}
	wantCounts := []count{{"other", "0", "1", "0", "0"}, {"web", "2", "2", "1", "0"}}
	if diff := cmp.Diff(wantCounts, counts); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}

	rows, err := s.Addresses(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Address, Services, Reservation string }
	var got []row
	for _, r := range rows {
		res := ""
		if r.Reservation != nil {
			res = r.Reservation.Name + " for " + r.Reservation.Service
			if r.Reservation.Until != nil {
				res += " until " + r.Reservation.Until.Format(time.RFC3339)
			}
		}
		got = append(got, row{r.Address, strings.Join(r.Services, ","), res})
	}
	want := []row{
		{"198.51.100.0", "blue/a", ""},
		{"198.51.100.1", "blue/b", ""},
		{"198.51.100.2", "", "blue/keep-future for future"},
		{"198.51.100.3", "", "blue/retained-gone for gone until " + until.UTC().Format(time.RFC3339)},
		{"203.0.113.0", "", "blue/keep-elsewhere for elsewhere"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if free, _ := s.Free(""); len(free) != 0 {
		t.Errorf("free spans %v, want none: reserved addresses are not free", free)
	}

	late := explainOf(t, s, "lateone")
	if late.Decision.Reason != assign.ReasonPoolExhaustedByReservations {
		t.Fatalf("lateone: %s, want PoolExhaustedByReservations", late.Decision.Reason)
	}
	for _, p := range late.Pools {
		if p.Pool == "web" && !strings.Contains(p.Why, "reserved by AddressReservation blue/keep-future,blue/retained-gone") {
			t.Errorf("pool web: %q, want the reservations named", p.Why)
		}
	}
	if !strings.Contains(late.Hint, "AddressReservation") {
		t.Errorf("hint %q does not say to look at the reservations", late.Hint)
	}

	web := explainOf(t, s, "web")
	if len(web.Addresses) != 0 || len(web.Reservations) != 1 ||
		!strings.Contains(web.Reservations[0], "kept by an older AddressReservation, retained-gone") {
		t.Errorf("web: addresses %v, reservations %q; want none and keep-web waiting for the older one", web.Addresses, web.Reservations)
	}

	elsewhere := explainOf(t, s, "elsewhere")
	if len(elsewhere.Reservations) != 1 || !strings.Contains(elsewhere.Reservations[0], `cannot be given to it (NoMatchingPool)`) {
		t.Errorf("elsewhere: %q, want why it cannot use keep-elsewhere", elsewhere.Reservations)
	}
}

// TestExplainOrigin: a Service given its addresses back by a reservation
// or by its record says so.
func TestExplainOrigin(t *testing.T) {
	s, err := NewState(assign.Cluster{
		Pools: []v1beta1.IPAddressPool{pool("web", []string{"198.51.100.0/30"})},
		Services: []corev1.Service{*svc("web"),
			*svc("restored", annotate(assign.AnnotationAllocation, `{"ips":["198.51.100.3"]}`))},
		Reservations: []v1alpha1.AddressReservation{reservation("keep-web", "web", nil, "198.51.100.2")},
	}, KeepAll)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"web":      "kept for it by AddressReservation blue/keep-web",
		"restored": "given back from its allocation record (steadylb.io/allocation)",
	} {
		if e := explainOf(t, s, name); e.Origin != want {
			t.Errorf("%s: origin %q, want %q", name, e.Origin, want)
		}
	}
	if e := explainOf(t, s, "web"); len(e.Reservations) != 1 || !strings.Contains(e.Reservations[0], "bound") {
		t.Errorf("web: reservations %q, want keep-web bound", e.Reservations)
	}
}

func explainOf(t *testing.T, s *State, name string) Explanation {
	t.Helper()
	e, err := s.Explain(ipam.ServiceKey{Namespace: "blue", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var made int

func shows(ip string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
}

// reservation makes an AddressReservation; those made first are older.
func reservation(name, service string, expires *metav1.Time, addrs ...string) v1alpha1.AddressReservation {
	made++
	r := v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: name,
		CreationTimestamp: metav1.Unix(int64(100+made), 0)},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: service, Addresses: addrs, ExpiresAt: expires}}
	if expires != nil {
		r.Labels = map[string]string{v1alpha1.LabelRetained: "true"}
	}
	return r
}
