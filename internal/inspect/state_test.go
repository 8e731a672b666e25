package inspect

import (
	"net/netip"

	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestViewsAnswerFromWhatTheyKeep: each view answers the same from a State
// that kept only the decisions it says it reads as from one that kept
// them all. The cluster has a decision of every kind a view looks at: an
// address shared by two Services (dated by the older one's decision), a
// Service waiting for room, one showing an address outside every pool (a
// finding for migrate) and a reservation.
func TestViewsAnswerFromWhatTheyKeep(t *testing.T) {
	shared := func(port int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			annotate("metallb.io/allow-shared-ip", "web")(s)
			s.Spec.Ports = []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: port}}
		}
	}
	cluster := assign.Cluster{
		Pools: []v1beta1.IPAddressPool{pool("web", []string{"198.51.100.0/30"})},
		Services: []corev1.Service{
			*svc("a", shows("198.51.100.0"), shared(80)),
			*svc("bb", shows("198.51.100.0"), shared(443)),
			*svc("ccc", shows("198.51.100.1")),
			*svc("dddd", shows("203.0.113.9")),
			*svc("eeeee"),
			*svc("ffffff"),
		},
		Reservations: []v1alpha1.AddressReservation{reservation("keep", "later", nil, "198.51.100.3")},
	}
	all, err := NewState(cluster, KeepAll)
	if err != nil {
		t.Fatal(err)
	}
	if waiting := all.Pools()[0].Waiting; len(waiting) == 0 {
		t.Fatalf("no Service waits in %+v: the cluster does not exercise KeepWaiting", all.Pools())
	}
	state := func(keep Keep) *State {
		t.Helper()
		s, err := NewState(cluster, keep)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	opts := cmp.Options{cmp.AllowUnexported(AddressRow{}, PoolVerdict{}), cmpopts.EquateComparable(netip.Addr{}), cmpopts.EquateEmpty()}
	check := func(view string, want, got any) {
		t.Helper()
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("%s (-all kept +as kept for it):\n%s", view, diff)
		}
	}

	check("pools", all.Pools(), state(KeepWaiting).Pools())
	wantRows, _ := all.Addresses(Filter{})
	gotRows, _ := state(KeepAssigned).Addresses(Filter{})
	check("addresses", wantRows, gotRows)
	wantFree, _ := all.Free("")
	gotFree, _ := state(KeepNone).Free("")
	check("addresses --free", wantFree, gotFree)
	for _, name := range []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "later"} {
		k := ipam.ServiceKey{Namespace: "blue", Name: name}
		want, wantErr := all.Explain(k)
		got, gotErr := state(KeepService(k)).Explain(k)
		check("explain "+name, want, got)
		check("explain "+name+" error", errString(wantErr), errString(gotErr))
	}
	var want Migration
	want.addFindings(all)
	got, err := Migrate(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Findings) == 0 {
		t.Fatal("no finding: the cluster does not exercise what migrate keeps")
	}
	check("migrate", want.Findings, got.Findings)
	check("migrate changed", want.Changed, got.Changed)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
