package assign

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
)

// TestReplayReservations checks that Replay holds the AddressReservations
// as the startup barrier does: a reserved address goes to nobody but its
// Service, which takes it when pending; a reservation never moves a
// holder; an expired one holds nothing; a record brings its addresses
// back; and a Service that finds the pool full of reservations is told so.
func TestReplayReservations(t *testing.T) {
	now := time.Unix(5000, 0)
	at := func(sec int) func(*corev1.Service) {
		return func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+sec), 0)) }
	}
	named := func(n string) func(*corev1.Service) { return func(s *corev1.Service) { s.Name = n } }
	shows := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
	}
	recorded := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Annotations = map[string]string{AnnotationAllocation: `{"ips":["` + ip + `"]}`}
		}
	}
	cluster := Cluster{
		Pools: []v1beta1.IPAddressPool{replayPool("p", "198.51.100.0/30")},
		Services: []corev1.Service{
			*service(named("holder"), at(1), shows("198.51.100.0")),
			*service(named("late"), at(4)),
			*service(named("web"), at(3)),
			*service(named("restored"), at(2), recorded("198.51.100.3")),
		},
		Reservations: []v1alpha1.AddressReservation{
			replayReservation("keep-future", "future", 10, nil, "198.51.100.1"),
			replayReservation("keep-web", "web", 11, nil, "198.51.100.2"),
			replayReservation("keep-taken", "gone", 12, nil, "198.51.100.0"),
			replayReservation("retained-old", "old", 13, &metav1.Time{Time: now.Add(-time.Second)}, "198.51.100.3"),
		},
		Now: now,
	}
	r, err := Replay(cluster)
	if err != nil {
		t.Fatal(err)
	}
	got := verdictRows(r)
	want := []verdictRow{
		{"holder", "kept", "[198.51.100.0]", ReasonAssigned},
		{"restored", "recalled", "[198.51.100.3]", ReasonAssigned},
		{"web", "pending", "[198.51.100.2]", ReasonAssigned},
		{"late", "pending", "[]", ReasonPoolExhaustedByReservations},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	origins := map[string]Origin{}
	for _, v := range r.Verdicts {
		origins[v.Service.Name] = v.Origin
	}
	wantOrigins := map[string]Origin{"holder": {}, "restored": {Record: true}, "web": {Reservation: "keep-web"}, "late": {}}
	if diff := cmp.Diff(wantOrigins, origins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}

	type res struct {
		Name, Held, Reason string
		Expired, Retained  bool
	}
	var gotRes []res
	for _, x := range r.Reservations {
		gotRes = append(gotRes, res{x.Object.Name, addrList(x.Held), x.Condition.Reason, x.Expired, x.Retained})
	}
	wantRes := []res{
		{"keep-future", "[198.51.100.1]", v1alpha1.ReasonWaitingForService, false, false},
		{"keep-web", "[]", v1alpha1.ReasonBound, false, false},
		{"keep-taken", "[]", v1alpha1.ReasonAddressInUse, false, false},
		{"retained-old", "[]", v1alpha1.ReasonAddressInUse, true, true},
	}
	if diff := cmp.Diff(wantRes, gotRes); diff != "" {
		t.Errorf("reservations (-want +got):\n%s", diff)
	}
	holders := r.Book.Holders(netip.MustParseAddr("198.51.100.1"))
	if res, ok := ReservationHolder(holders[0]); len(holders) != 1 || !ok || res.Name != "keep-future" {
		t.Errorf("198.51.100.1 is held by %v, want the stand-in of keep-future", holders)
	}
}

// TestReplayWithoutReservations: the same Services without the
// reservations decide as before, so the reservations are what changed
// the verdicts above.
func TestReplayWithoutReservations(t *testing.T) {
	named := func(n string) func(*corev1.Service) { return func(s *corev1.Service) { s.Name = n } }
	r, err := Replay(Cluster{Pools: []v1beta1.IPAddressPool{replayPool("p", "198.51.100.0/31")},
		Services: []corev1.Service{*service(named("a")), *service(named("b"))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Verdicts {
		if v.Condition.Reason != ReasonAssigned {
			t.Errorf("%s: %s, want Assigned", v.Service.Name, v.Condition.Reason)
		}
	}
	if len(r.Reservations) != 0 {
		t.Errorf("reservations %v, want none", r.Reservations)
	}
}

func replayReservation(name, service string, created int64, expires *metav1.Time, addrs ...string) v1alpha1.AddressReservation {
	obj := v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		CreationTimestamp: metav1.Unix(created, 0)},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: service, Addresses: addrs, ExpiresAt: expires}}
	if expires != nil {
		obj.Labels = map[string]string{v1alpha1.LabelRetained: "true"}
	}
	return obj
}
