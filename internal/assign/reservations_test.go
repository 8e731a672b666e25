package assign

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/internal/ipam"
)

func testReservation(name, service string, created time.Time, addrs ...string) *Reservation {
	obj := &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name,
		CreationTimestamp: metav1.Time{Time: created}},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: service, Addresses: addrs}}
	return ReservationFrom(obj)
}

// TestReservationsHoldAndHandOver: the older of two reservations naming
// an address keeps it, a Service holding it keeps it, nobody else is
// given a reserved address, and the named Service takes it over.
func TestReservationsHoldAndHandOver(t *testing.T) {
	alloc := newTestAllocator(t)
	team := labels.Set{"team": "a"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	holder := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "holder"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	holder.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.0"}}
	if c := alloc.book.Restore([]ipam.Claim{alloc.Claim(holder, team)}); len(c) > 0 {
		t.Fatalf("restore: %v", c)
	}
	older := testReservation("older", "web", t0, "192.0.2.1")
	younger := testReservation("younger", "api", t0.Add(time.Second), "192.0.2.1")
	onHolder := testReservation("on-holder", "later", t0, "192.0.2.0")
	alloc.reserved = newReservations()
	for _, r := range []*Reservation{younger, older, onHolder} {
		alloc.reserved.put(r)
	}
	conflicts := alloc.holdReservations(alloc.reserved.all(), t0)
	if len(conflicts) != 2 {
		t.Errorf("conflicts %v, want two: on-holder (held by holder) and younger (held by older)", conflicts)
	}
	checkJudged := func(r *Reservation, want string) {
		t.Helper()
		if cond, _ := alloc.Judge(r, nil, ""); cond.Reason != want {
			t.Errorf("%s: %s (%s), want %s", r.object.Name, cond.Reason, cond.Message, want)
		}
	}
	checkJudged(older, v1alpha1.ReasonWaitingForService)
	checkJudged(younger, v1alpha1.ReasonAddressReserved)
	checkJudged(onHolder, v1alpha1.ReasonAddressInUse)

	// Anyone else gets the next free address, and a request for the
	// reserved one is refused.
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "other"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if d := alloc.Decide(other, team); addrList(d.Addrs) != "[192.0.2.2]" {
		t.Errorf("other got %v, want 192.0.2.2", d.Addrs)
	}
	grabber := other.DeepCopy()
	grabber.Name, grabber.Spec.LoadBalancerIP = "grabber", "192.0.2.1"
	if d := alloc.Decide(grabber, team); d.Condition.Reason != ReasonRequestedIPInUse || !strings.Contains(d.Condition.Message, "reservation:older") {
		t.Errorf("grabber: %s %q, want RequestedIPInUse naming the reservation", d.Condition.Reason, d.Condition.Message)
	}

	// The named Service takes it over.
	web := other.DeepCopy()
	web.Name = "web"
	if d := alloc.Decide(web, team); addrList(d.Addrs) != "[192.0.2.1]" {
		t.Fatalf("web got %v, want its reserved 192.0.2.1", d.Addrs)
	}
	checkJudged(older, v1alpha1.ReasonBound)
	if _, held := alloc.book.Assigned(older.StandIn()); held {
		t.Error("the stand-in still holds an address the Service took")
	}

	// The holder lets go: the address goes to on-holder, not to the free
	// list.
	gone, _ := alloc.book.Release(Key(holder))
	alloc.Freed(gone.Addrs)
	checkJudged(onHolder, v1alpha1.ReasonWaitingForService)
	if holders := alloc.book.Holders(netip.MustParseAddr("192.0.2.0")); len(holders) != 1 || holders[0] != onHolder.StandIn() {
		t.Errorf("192.0.2.0 held by %v, want on-holder's stand-in", holders)
	}
	if got := alloc.ReservedByPool()["team-a"]; got != 1 {
		t.Errorf("reserved in team-a = %d, want 1", got)
	}
}

// TestReservationNotUsable: a reservation for addresses the Service's
// pools do not admit stays with its stand-in, and the Service hears why.
func TestReservationNotUsable(t *testing.T) {
	alloc := newTestAllocator(t)
	alloc.reserved = newReservations()
	r := testReservation("keep", "web", time.Now(), "192.0.2.3")
	alloc.reserved.put(r)
	alloc.holdReservations(alloc.reserved.all(), time.Now())
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	d := alloc.Decide(web, nil) // its namespace is not selected
	if len(d.Addrs) != 0 {
		t.Fatalf("web got %v, want nothing", d.Addrs)
	}
	var noted bool
	for _, e := range d.Events {
		noted = noted || e.Reason == EventReservationNotUsable
	}
	if !noted {
		t.Errorf("events %+v, want %s", d.Events, EventReservationNotUsable)
	}
	if _, held := alloc.book.Assigned(r.StandIn()); !held {
		t.Error("the stand-in let go of the address")
	}
}

// TestRetentionWindowNeverShorter: the end of a retention window, written
// as spec.expiresAt (which the API server keeps to the second) and read
// back, is never before the deletion plus the window, nor a second or more
// after it, and the controller's memory holds what the API server does.
func TestRetentionWindowNeverShorter(t *testing.T) {
	second := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		now    time.Time
		window time.Duration
	}{
		{"on a whole second", second, time.Minute},
		{"just after a second", second.Add(time.Nanosecond), time.Minute},
		{"just before a second", second.Add(999 * time.Millisecond), time.Minute},
		{"a window of a second and a half", second.Add(700 * time.Millisecond), 1500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			alloc := newTestAllocator(t)
			alloc.reserved = newReservations()
			res := alloc.Retain(ipam.ServiceKey{Namespace: "apps", Name: "web"},
				[]netip.Addr{netip.MustParseAddr("192.0.2.1")}, tt.now, tt.window)
			if res == nil {
				t.Fatal("nothing retained")
			}
			data, err := json.Marshal(metav1.Time{Time: res.expires})
			if err != nil {
				t.Fatal(err)
			}
			var written metav1.Time
			if err := json.Unmarshal(data, &written); err != nil {
				t.Fatal(err)
			}
			end := tt.now.Add(tt.window)
			if written.Before(&metav1.Time{Time: end}) || written.Sub(end) >= time.Second {
				t.Errorf("expiresAt %s for a window ending at %s", written.UTC().Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
			}
			if !written.Time.Equal(res.expires) {
				t.Errorf("the controller holds %s, the API server would hold %s", res.expires, written.Time)
			}
		})
	}
}
