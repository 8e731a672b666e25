package controller

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

// changeService applies change to a Service with a merge patch, as a user
// editing it would.
func changeService(t *testing.T, ns, name string, change func(*corev1.Service)) {
	t.Helper()
	svc := &corev1.Service{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatalf("get service %s: %v", name, err)
	}
	base := svc.DeepCopy()
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	change(svc)
	if err := kube().Patch(ctx, svc, client.MergeFrom(base)); err != nil {
		t.Fatalf("change service %s: %v", name, err)
	}
}

func annotate(key, value string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Annotations[key] = value }
}

func addPort(port int32) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.Ports[0].Name = "main" // a Service with two ports names them
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "extra", Port: port, Protocol: corev1.ProtocolTCP})
	}
}

// addOthersPort adds the port the other Service uses, so the two clash.
func addOthersPort(s *corev1.Service) {
	port := map[string]int32{"z-older": 443, "a-younger": 80}[s.Name]
	addPort(port)(s)
}

// TestRequestChangesOnASharedAddress changes the request of one of two
// Services sharing an address, every way that matters, once while the
// controller runs and once while it is down. Both runs must end the same
// way, and a restart after that writes nothing. The Service that changed
// its request is the only one that may lose or change its address; the
// other never moves. The older Service has the name that sorts last, so
// neither name order nor age order alone can produce the right outcome for
// both "changer is older" and "changer is younger".
func TestRequestChangesOnASharedAddress(t *testing.T) {
	const shared = "203.0.113.120"
	changes := []struct {
		name   string
		change func(*corev1.Service)
		// The changer's outcome; the other Service always keeps shared.
		ips, reason string
	}{
		{"unreadable request keeps everything",
			annotate("metallb.io/loadBalancerIPs", "not-an-ip"), shared, assign.ReasonInvalidRequest},
		{"another key, asking for the shared address, loses it",
			func(s *corev1.Service) {
				s.Annotations["metallb.io/allow-shared-ip"] = "k2"
				s.Annotations["metallb.io/loadBalancerIPs"] = shared
			}, "", assign.ReasonRequestedIPInUse},
		{"another key, asking for nothing, moves",
			annotate("metallb.io/allow-shared-ip", "k2"), "203.0.113.121", assign.ReasonAssigned},
		{"a clashing port moves", addOthersPort, "203.0.113.121", assign.ReasonAssigned},
		{"a compatible port stays", addPort(8443), shared, assign.ReasonAssigned},
	}
	for _, c := range changes {
		for _, changer := range []string{"z-older", "a-younger"} {
			for _, down := range []bool{false, true} {
				name := c.name + "/changer " + changer
				if down {
					name += "/while down"
				}
				t.Run(name, func(t *testing.T) {
					checkSharedChange(t, shared, changer, down, c.change, c.ips, c.reason)
				})
			}
		}
	}
}

func checkSharedChange(t *testing.T, shared, changer string, down bool, change func(*corev1.Service), ips, reason string) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "shared-"+ns, ns, "203.0.113.120/30")
	p := startController(t)
	key := fixture.Annotate("metallb.io/allow-shared-ip", "k")
	older := fixture.Service(t, ns, "z-older", key, withPort(80), fixture.Annotate("metallb.io/loadBalancerIPs", shared))
	fixture.Later(t, older)
	fixture.Service(t, ns, "a-younger", key, withPort(443), fixture.Annotate("metallb.io/loadBalancerIPs", shared))
	before := waitSettled(t, ns, "z-older", "a-younger")
	if before["z-older"].ips != shared || before["a-younger"].ips != shared {
		t.Fatalf("start: %+v, want both on %s", before, shared)
	}
	// The sharing request stays; only the changes below differ.
	changeService(t, ns, changer, func(s *corev1.Service) { delete(s.Annotations, "metallb.io/loadBalancerIPs") })
	p.waitIdle(t)
	if down {
		p.Kill()
	}
	changeService(t, ns, changer, change)
	if down {
		p = startController(t)
	}
	var got map[string]observed
	fixture.WaitFor(t, changer+" to be judged", func() bool {
		got = observe(t, ns)
		return got[changer].ips == ips && got[changer].reason == reason
	})
	p.waitIdle(t)
	got = observe(t, ns)
	other := map[string]string{"z-older": "a-younger", "a-younger": "z-older"}[changer]
	if got[other].ips != shared || got[other].reason != assign.ReasonAssigned {
		t.Errorf("%s = %+v, want it to keep %s", other, got[other], shared)
	}
	if got[changer].ips != ips || got[changer].reason != reason {
		t.Errorf("%s = %+v, want ips %q reason %s", changer, got[changer], ips, reason)
	}
	p.Kill()
	startController(t)
	checkKept(t, got, observe(t, ns))
}

// TestFreedAddressWakesTheOldestWaiter moves the holder of a one-address
// pool to another pool: the address it leaves goes to the oldest Service
// waiting for that pool at once, not when something unrelated happens.
// The older waiter has the name that sorts last.
func TestFreedAddressWakesTheOldestWaiter(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "solo-"+ns, ns, "198.51.100.160/32")
	fixture.Pool(t, "other-"+ns, ns, "198.51.100.161/32")
	startController(t)
	solo := fixture.Annotate("metallb.io/address-pool", "solo-"+ns)
	fixture.Service(t, ns, "holder", solo)
	first := fixture.Service(t, ns, "zz-first", solo)
	fixture.Later(t, first)
	fixture.Service(t, ns, "aa-second", solo)
	got := waitSettled(t, ns, "holder", "zz-first", "aa-second")
	if got["holder"].ips != "198.51.100.160" || got["zz-first"].reason != assign.ReasonPoolExhausted {
		t.Fatalf("start: %+v", got)
	}
	setAnnotations(t, ns, "holder", map[string]string{"metallb.io/address-pool": "other-" + ns})
	fixture.WaitFor(t, "the oldest waiter to get the freed address", func() bool {
		got = observe(t, ns)
		return got["holder"].ips == "198.51.100.161" && got["zz-first"].ips == "198.51.100.160"
	})
	if o := got["aa-second"]; o.ips != "" || o.reason != assign.ReasonPoolExhausted {
		t.Errorf("aa-second = %+v, want it still waiting", o)
	}
	checkUnique(t, got)
}

// TestRestartServesLostBeforePending restarts on a duplicate that another
// writer left while the controller was down, with a pending Service older
// than the duplicate. Names sort opposite to ages, so each step of the
// order is visible: the oldest claim keeps the address (not the first
// name), and the Service that lost it is re-served before the older
// pending one, which then finds the pool full.
func TestRestartServesLostBeforePending(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "order-"+ns, ns, "203.0.113.170/31")
	p := startController(t)
	holder := fixture.Service(t, ns, "z-holder")
	before := waitSettled(t, ns, "z-holder")
	if before["z-holder"].ips != "203.0.113.170" {
		t.Fatalf("z-holder = %+v, want 203.0.113.170", before["z-holder"])
	}
	p.Kill()
	fixture.Later(t, holder)
	pending := fixture.Service(t, ns, "y-pending")
	fixture.Later(t, pending)
	dup := fixture.Service(t, ns, "x-lost")
	dup.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.170"}}
	if err := kube().Status().Update(ctx, dup); err != nil {
		t.Fatalf("write the duplicate: %v", err)
	}
	startController(t)
	got := observe(t, ns)
	checkKept(t, map[string]observed{"z-holder": before["z-holder"]}, got)
	checkOutcomes(t, got, []outcome{
		{"x-lost", "203.0.113.171", assign.ReasonAssigned, ""},
		{"y-pending", "", assign.ReasonPoolExhausted, ""},
	})
}

// TestDeprecatedPrefixBesideTheCurrentOne warns about an annotation under
// the old prefix even when the current prefix is set too (and wins).
func TestDeprecatedPrefixBesideTheCurrentOne(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "prefix-"+ns, ns, "203.0.113.176/31")
	startController(t)
	fixture.Service(t, ns, "both-prefixes", fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.177"),
		fixture.Annotate("metallb.universe.tf/loadBalancerIPs", "203.0.113.176"))
	got := waitSettled(t, ns, "both-prefixes")
	if got["both-prefixes"].ips != "203.0.113.177" {
		t.Errorf("both-prefixes = %+v, want the metallb.io/ value 203.0.113.177", got["both-prefixes"])
	}
	waitEvent(t, ns, "both-prefixes", assign.EventDeprecatedAnnotation)
}

// TestNoPoolsNeverClears runs the controller on a configuration namespace
// without pools, as after a migration that applies the pools after the
// controller, or with a wrong --namespace. It stays unready and writes
// nothing; once a pool exists it serves; when every pool is deleted again
// it keeps every address and serves nothing new until a pool is back.
func TestNoPoolsNeverClears(t *testing.T) {
	ns := fixture.Namespace(t)
	cfgNS := fixture.Namespace(t)
	held := fixture.Service(t, ns, "held")
	held.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.150"}}
	if err := kube().Status().Update(ctx, held); err != nil {
		t.Fatalf("write held's status: %v", err)
	}
	fixture.Service(t, ns, "new")
	created := observe(t, ns)

	p := launchController(t, "--namespace", cfgNS)
	waitNoPoolsReported(t, cfgNS)
	if p.ready() {
		t.Error("controller is ready without any pool")
	}
	checkKept(t, created, observe(t, ns))

	pool := poolIn(t, cfgNS, "only", ns, "198.51.100.150/31")
	p.waitReady(t)
	got := waitSettled(t, ns, "held", "new")
	checkOutcomes(t, got, []outcome{
		{"held", "198.51.100.150", assign.ReasonAssigned, ""},
		{"new", "198.51.100.151", assign.ReasonAssigned, ""},
	})
	p.waitIdle(t)
	got = observe(t, ns)

	if err := kube().Delete(ctx, pool); err != nil {
		t.Fatalf("delete the only pool: %v", err)
	}
	waitNoPoolsReported(t, cfgNS)
	fixture.WaitFor(t, "the controller to turn unready", func() bool { return !p.ready() })
	late := fixture.Service(t, ns, "late")
	waitQueued(t, p, late)
	checkKept(t, got, observe(t, ns))
	if o := observe(t, ns)["late"]; o.resourceVersion != late.ResourceVersion {
		t.Errorf("late was written while no pool existed: %+v", o)
	}

	// A new pool over the same addresses and more: the holders keep their
	// addresses (only the pool annotation changes), late gets a free one.
	poolIn(t, cfgNS, "back", ns, "198.51.100.148/30")
	p.waitReady(t)
	// The holders are rewritten in their own reconciles, which may come
	// after late's: wait for all three.
	var after map[string]observed
	fixture.WaitFor(t, `held and new to name pool "back", and late to be decided`, func() bool {
		after = observe(t, ns)
		return strings.Contains(after["held"].message, `pool "back"`) &&
			strings.Contains(after["new"].message, `pool "back"`) && after["late"].reason != ""
	})
	checkOutcomes(t, after, []outcome{
		{"held", "198.51.100.150", assign.ReasonAssigned, `pool "back"`},
		{"new", "198.51.100.151", assign.ReasonAssigned, `pool "back"`},
		{"late", "198.51.100.148", assign.ReasonAssigned, ""},
	})
}

// poolIn creates a pool in a configuration namespace of the test's own.
func poolIn(t *testing.T, cfgNS, name, serves string, addresses ...string) *v1beta1.IPAddressPool {
	t.Helper()
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cfgNS},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses,
			ServiceAllocation: &v1beta1.ServiceAllocation{Namespaces: []string{serves}}}}
	if err := kube().Create(ctx, pool); err != nil {
		t.Fatalf("create pool %s: %v", name, err)
	}
	t.Cleanup(func() { _ = kube().Delete(ctx, pool) })
	return pool
}

func waitNoPoolsReported(t *testing.T, cfgNS string) {
	t.Helper()
	state := &v1beta1.ConfigurationState{}
	fixture.WaitFor(t, "ConfigurationState to say no pool exists", func() bool {
		err := kube().Get(ctx, types.NamespacedName{Namespace: cfgNS, Name: "controller"}, state)
		return err == nil && state.Status.Result == v1beta1.ConfigurationInvalid &&
			strings.Contains(state.Status.ErrorSummary, "no IPAddressPool exists")
	})
}

// waitQueued waits until the controller has taken a reconcile of svc off
// its queue and holds it at the closed gate: one more add than before, and
// the one worker busy.
func waitQueued(t *testing.T, p *process, svc *corev1.Service) {
	t.Helper()
	fixture.WaitFor(t, "the controller to hold "+svc.Name+"'s reconcile at the gate", func() bool {
		m, err := scrape.Get("http://" + p.metrics + "/metrics")
		if err != nil {
			return false
		}
		active, _ := m.Value("controller_runtime_active_workers", "controller", "service")
		depth, _ := m.Value("workqueue_depth", "name", "service")
		return active == 1 && depth == 0
	})
}

// faultyTransport fails, while armed, every status write and every direct
// read of one Service, before they reach the API server: the write and
// the read that follows it to learn what happened both fail.
type faultyTransport struct {
	next    http.RoundTripper
	service string // namespace/name
	armed   atomic.Bool
	failed  atomic.Int32
}

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ns, name, _ := strings.Cut(f.service, "/")
	path := "/api/v1/namespaces/" + ns + "/services/" + name
	hit := (req.Method == http.MethodPatch && req.URL.Path == path+"/status") ||
		(req.Method == http.MethodGet && req.URL.Path == path)
	if hit && f.armed.Load() {
		f.failed.Add(1)
		return nil, errors.New("connection refused (injected)")
	}
	return f.next.RoundTrip(req)
}

// TestFailedWriteAndFailedReadHoldBoth moves a Service to another pool
// while its status write and the read after it fail: the controller cannot
// know whether the Service still shows its old address, so it must hold
// both. A Service asking for the old address is refused until the move is
// confirmed, and then gets it; no address is ever shown by two Services.
func TestFailedWriteAndFailedReadHoldBoth(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "from-"+ns, ns, "198.51.100.140/32")
	fixture.Pool(t, "to-"+ns, ns, "198.51.100.141/32")
	fixture.Service(t, ns, "mover", fixture.Annotate("metallb.io/address-pool", "from-"+ns))
	faults := &faultyTransport{service: ns + "/mover"}
	cfg := rest.CopyConfig(testenv.Shared.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { faults.next = rt; return faults }
	runInProcessWith(t, cfg, interceptor.Funcs{})
	if got := waitSettled(t, ns, "mover"); got["mover"].ips != "198.51.100.140" {
		t.Fatalf("mover = %+v, want 198.51.100.140", got["mover"])
	}
	moverSeen := recordAddresses(t, ns, "mover")
	takerSeen := recordAddresses(t, ns, "taker")

	faults.armed.Store(true)
	setAnnotations(t, ns, "mover", map[string]string{"metallb.io/address-pool": "to-" + ns})
	fixture.WaitFor(t, "the move's write and read to fail", func() bool { return faults.failed.Load() >= 2 })
	fixture.Service(t, ns, "taker", fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.140"))
	got := waitSettled(t, ns, "taker")
	if o := got["taker"]; o.ips != "" || o.reason != assign.ReasonRequestedIPInUse {
		t.Fatalf("taker = %+v while mover may still show the address; want RequestedIPInUse", o)
	}
	faults.armed.Store(false)
	fixture.WaitFor(t, "the move to land and the taker to get the old address", func() bool {
		got = observe(t, ns)
		return got["mover"].ips == "198.51.100.141" && got["taker"].ips == "198.51.100.140"
	})
	// The watches deliver after the reads above: wait until both have
	// seen the final state, then compare the whole histories.
	fixture.WaitFor(t, "the watches to see the final statuses", func() bool {
		return slices.Contains(moverSeen.distinct(), "198.51.100.141") && slices.Contains(takerSeen.distinct(), "198.51.100.140")
	})
	// The taker showed the address only after the mover stopped showing
	// it: its first non-empty status comes after the mover's last .140.
	if m, k := moverSeen.distinct(), takerSeen.distinct(); !slices.Equal(m, []string{"198.51.100.140", "198.51.100.141"}) ||
		!slices.Equal(k, []string{"", "198.51.100.140"}) {
		t.Errorf("mover showed %q, taker %q", m, k)
	}
}
