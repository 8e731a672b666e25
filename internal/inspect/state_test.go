package inspect

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
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
			*svc("ccc", shows("198.51.100.1"), func(s *corev1.Service) { s.Namespace = "red" }),
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
	for _, f := range []Filter{{}, {Namespace: "red"}, {Namespace: "blue"}, {Pool: "web"}, {Pool: "nope"}} {
		wantRows, wantErr := all.Addresses(f)
		if f == (Filter{}) && len(wantRows) < 4 {
			t.Fatalf("%d rows: the cluster does not exercise the addresses view", len(wantRows))
		}
		gotRows, gotErr := state(KeepAssigned).Addresses(f)
		check(fmt.Sprintf("addresses %+v", f), wantRows, gotRows)
		check(fmt.Sprintf("addresses %+v error", f), errString(wantErr), errString(gotErr))
		am := MakeAddresses(f, len(cluster.Services))
		s, err := NewState(cluster, am.Keep)
		if err != nil {
			t.Fatal(err)
		}
		gotRows, gotErr = am.Rows(s)
		check(fmt.Sprintf("addresses %+v, made during the replay", f), wantRows, gotRows)
		check(fmt.Sprintf("addresses %+v, made during the replay, error", f), errString(wantErr), errString(gotErr))
		if len(s.Replayed.Verdicts) != 0 {
			t.Errorf("the address maker kept %d decisions, want none", len(s.Replayed.Verdicts))
		}
	}
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

// TestAddressMakerAcrossBatches: the addresses made during the replay are
// Addresses' over more decisions than one batch hands over.
func TestAddressMakerAcrossBatches(t *testing.T) {
	cluster := assign.Cluster{Pools: []v1beta1.IPAddressPool{pool("big", []string{"198.51.100.0/24", "203.0.113.0/24"})}}
	for i := range 3*rowBatch + 17 {
		ip := fmt.Sprintf("198.51.100.%d", i)
		if i >= 256 {
			ip = fmt.Sprintf("203.0.113.%d", i-256)
		}
		s := svc(fmt.Sprintf("s%04d", i))
		if i < 500 {
			shows(ip)(s)
		}
		cluster.Services = append(cluster.Services, *s)
	}
	all, err := NewState(cluster, KeepAll)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := all.Addresses(Filter{})
	am := MakeAddresses(Filter{}, len(cluster.Services))
	s, err := NewState(cluster, am.Keep)
	if err != nil {
		t.Fatal(err)
	}
	got, err := am.Rows(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= rowBatch {
		t.Fatalf("%d rows: too few to cross batches", len(want))
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(AddressRow{}), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("rows (-Addresses +made during the replay):\n%s", diff)
	}
}

// TestSortByAddress: the rows come out in address order, each row whole,
// whatever order they came in: cycles of every length, IPv4 before IPv6.
func TestSortByAddress(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 10, 1000} {
		var rows []AddressRow
		for i := range n {
			a := netip.AddrFrom4([4]byte{198, 51, byte(100 + i/256), byte(i)})
			if i%3 == 0 {
				a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
			}
			rows = append(rows, AddressRow{addr: a, Address: a.String(), Services: []string{fmt.Sprintf("ns/svc-%d", i)}})
		}
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		want := slices.Clone(rows)
		slices.SortStableFunc(want, func(x, y AddressRow) int { return x.addr.Compare(y.addr) })
		sortByAddress(rows)
		if diff := cmp.Diff(want, rows, cmp.AllowUnexported(AddressRow{}), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
			t.Errorf("%d rows (-want +got):\n%s", n, diff)
		}
	}
}
