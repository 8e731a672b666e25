package assign

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// TestReplay checks that Replay decides as the startup barrier does: a
// duplicate goes to the older holder whatever the names, a Service that
// lost its address is served before the pending ones, pending Services
// oldest first.
func TestReplay(t *testing.T) {
	pools := []v1beta1.IPAddressPool{replayPool("p", "192.0.2.0/30")}
	at := func(sec int) func(*corev1.Service) {
		return func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+sec), 0)) }
	}
	shows := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
	}
	named := func(n string) func(*corev1.Service) { return func(s *corev1.Service) { s.Name = n } }
	notOurs := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }
	svcs := []corev1.Service{
		*service(named("z-old"), at(1), shows("192.0.2.1")),
		*service(named("a-young"), at(2), shows("192.0.2.1")),
		*service(named("outside"), at(3), shows("198.51.100.1")),
		*service(named("pending-late"), at(5)),
		*service(named("pending-early"), at(4)),
		*service(named("internal"), at(0), notOurs),
	}
	r, err := Replay(Cluster{Pools: pools, Services: svcs})
	if err != nil {
		t.Fatal(err)
	}
	got := verdictRows(r)
	want := []verdictRow{
		{"z-old", "kept", "[192.0.2.1]", ReasonAssigned},
		{"a-young", "lost", "[192.0.2.0]", ReasonAssigned},
		{"outside", "lost", "[192.0.2.2]", ReasonAssigned},
		{"pending-early", "pending", "[192.0.2.3]", ReasonAssigned},
		{"pending-late", "pending", "[]", ReasonPoolExhausted},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if v, _ := r.Verdict(Key(&svcs[1])); len(v.Refused) != 1 {
		t.Errorf("a-young: refused %v, want its duplicate", v.Refused)
	}
	if _, ok := r.Verdict(Key(&svcs[5])); ok {
		t.Error("a ClusterIP Service has a verdict")
	}
	if n := len(r.Book.Services()); n != 4 {
		t.Errorf("the book holds %d Services, want 4: every write taken as accepted", n)
	}
}

// TestReplayIgnoredRecordWaitsItsTurn: a Service whose allocation record
// names an address another Service holds is ignored and served as if it
// had no record, with the pending Services by age, so an older pending
// Service takes the last free address first. A record that can be
// honoured still goes before every pending Service. Names sort opposite to
// ages: an order by name would give the other answer.
func TestReplayIgnoredRecordWaitsItsTurn(t *testing.T) {
	pools := []v1beta1.IPAddressPool{replayPool("p", "192.0.2.0/30")}
	at := func(sec int) func(*corev1.Service) {
		return func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+sec), 0)) }
	}
	shows := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
	}
	recorded := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Annotations = map[string]string{AnnotationAllocation: `{"ips":["` + ip + `"]}`}
		}
	}
	named := func(n string) func(*corev1.Service) { return func(s *corev1.Service) { s.Name = n } }
	svcs := []corev1.Service{
		*service(named("m-holder"), at(0), shows("192.0.2.0")),
		*service(named("n-holder"), at(1), shows("192.0.2.1")),
		*service(named("z-pending"), at(2)),
		*service(named("a-restored"), at(3), recorded("192.0.2.0")),
		*service(named("b-valid"), at(4), recorded("192.0.2.3")),
	}
	r, err := Replay(Cluster{Pools: pools, Services: svcs})
	if err != nil {
		t.Fatal(err)
	}
	want := []verdictRow{
		{"m-holder", "kept", "[192.0.2.0]", ReasonAssigned},
		{"n-holder", "kept", "[192.0.2.1]", ReasonAssigned},
		{"b-valid", "recalled", "[192.0.2.3]", ReasonAssigned},
		{"z-pending", "pending", "[192.0.2.2]", ReasonAssigned},
		{"a-restored", "pending", "[]", ReasonPoolExhausted},
	}
	if diff := cmp.Diff(want, verdictRows(r)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	v, _ := r.Verdict(Key(&svcs[3]))
	var reasons []string
	for _, e := range v.Events {
		reasons = append(reasons, e.Reason)
	}
	if !slices.Contains(reasons, EventRecordIgnored) {
		t.Errorf("a-restored's events %v, want %s", reasons, EventRecordIgnored)
	}
	if v.Origin.Record {
		t.Error("a-restored's verdict says its addresses came from its record")
	}
}

func TestReplayRefuses(t *testing.T) {
	if _, err := Replay(Cluster{}); !errors.Is(err, ErrNoPools) {
		t.Errorf("no pools: %v, want ErrNoPools", err)
	}
	overlapping := []v1beta1.IPAddressPool{replayPool("a", "192.0.2.0/30"), replayPool("b", "192.0.2.2/31")}
	var list config.ErrorList
	if _, err := Replay(Cluster{Pools: overlapping}); !errors.As(err, &list) {
		t.Errorf("overlapping pools: %v, want a config.ErrorList", err)
	}
}

func replayPool(name string, addrs ...string) v1beta1.IPAddressPool {
	return v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metallb-system"},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
}

// verdictRow is a verdict as the tests compare it.
type verdictRow struct{ Name, Step, Addrs, Reason string }

func verdictRows(r *Replayed) []verdictRow {
	var out []verdictRow
	for _, v := range r.Verdicts {
		out = append(out, verdictRow{v.Service.Name, v.Step.String(), addrList(v.Addrs), v.Condition.Reason})
	}
	return out
}

// TestReplayVerdictRequest checks that every verdict's Request is the
// Service's request as the controller reads it, whether the verdict keeps
// it or takes it from the book: kept ports in order, ports the book holds
// sorted (so kept apart), a request that cannot be read, one without room.
func TestReplayVerdictRequest(t *testing.T) {
	pools := []v1beta1.IPAddressPool{replayPool("p", "192.0.2.0/31")}
	at := func(sec int) func(*corev1.Service) {
		return func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+sec), 0)) }
	}
	named := func(n string) func(*corev1.Service) { return func(s *corev1.Service) { s.Name = n } }
	shows := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}} }
	}
	ports := func(ps ...int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.Ports = nil
			for _, p := range ps {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
			}
		}
	}
	svcs := []corev1.Service{
		*service(named("kept"), at(1), shows("192.0.2.0"), ports(80, 443)),
		*service(named("unsorted"), at(2), shows("192.0.2.1"), ports(443, 80)),
		*service(named("unreadable"), at(3), func(s *corev1.Service) {
			s.Annotations = map[string]string{"metallb.io/loadBalancerIPs": "not-an-address"}
		}),
		*service(named("no-room"), at(4)),
	}
	r, err := Replay(Cluster{Pools: pools, Services: svcs})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Verdicts) != len(svcs) {
		t.Fatalf("%d verdicts, want %d", len(r.Verdicts), len(svcs))
	}
	fromBook := 0
	for i := range r.Verdicts {
		v := &r.Verdicts[i]
		want, _ := parseService(v.Object)
		want.EligiblePools = EligiblePools(r.Config, v.Object.Namespace, nil, v.Object.Labels)
		if diff := cmp.Diff(want.Request, v.Request()); diff != "" {
			t.Errorf("%s: Request() (-read +verdict):\n%s", v.Service.Name, diff)
		}
		if v.request == nil {
			fromBook++
		}
	}
	if fromBook != 1 { // only "kept" holds by the request it reads
		t.Errorf("%d verdicts take their request from the book, want 1", fromBook)
	}
}

// TestReplayKeeping: a replay that keeps some decisions keeps exactly
// those of the full replay, whole, over a cluster with every step
// (records, reservations, shared addresses, pending Services).
func TestReplayKeeping(t *testing.T) {
	c := syntheticCluster(2000)
	all, err := Replay(c)
	if err != nil {
		t.Fatal(err)
	}
	everyThird := func(v *Verdict) bool {
		return len(v.Service.Name)%3 == 0 || v.Service.Name[len(v.Service.Name)-1]%3 == 0
	}
	kept, err := ReplayKeeping(c, everyThird)
	if err != nil {
		t.Fatal(err)
	}
	var want []Verdict
	steps := map[Step]int{}
	for i := range all.Verdicts {
		if everyThird(&all.Verdicts[i]) {
			want = append(want, all.Verdicts[i])
			steps[all.Verdicts[i].Step]++
		}
	}
	if len(steps) < 3 || len(want) == len(all.Verdicts) {
		t.Fatalf("kept %d of %d decisions, of steps %v: the test keeps too little or everything", len(want), len(all.Verdicts), steps)
	}
	if diff := cmp.Diff(withRequests(want), withRequests(kept.Verdicts), cmpopts.IgnoreUnexported(Verdict{}),
		cmpopts.EquateComparable(netip.Addr{}), cmp.Comparer(sameError)); diff != "" {
		t.Errorf("kept decisions (-full replay +keeping):\n%s", diff)
	}
	if diff := cmp.Diff(all.Book.AllStats(), kept.Book.AllStats()); diff != "" {
		t.Errorf("book (-full replay +keeping):\n%s", diff)
	}
}

// verdictWithRequest is a Verdict with what Request returns, for
// comparisons: the field it reads is unexported.
type verdictWithRequest struct {
	Verdict
	Request ipam.Request
}

func withRequests(vs []Verdict) []verdictWithRequest {
	out := make([]verdictWithRequest, len(vs))
	for i := range vs {
		out[i] = verdictWithRequest{vs[i], vs[i].Request()}
	}
	return out
}

// sameError compares errors by what they say: the two replays make their
// own.
func sameError(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
}
