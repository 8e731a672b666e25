package controller

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestRequestChangeMakesBeforeBreak changes what one Service asks for,
// step by step. It moves straight from its old address to its new one,
// never through "no address"; it keeps its address when the new request
// cannot be served but the old address is still allowed; it loses it only
// when no pool that may serve it holds it any more. A bystander is never
// written.
func TestRequestChangeMakesBeforeBreak(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "mbb-a", ns, "192.0.2.32/30")
	fixture.Pool(t, "mbb-b", ns, "192.0.2.36/31")
	startController(t)
	fixture.Service(t, ns, "mover", fixture.Annotate("metallb.io/address-pool", "mbb-a"))
	fixture.Service(t, ns, "bystander", fixture.Annotate("metallb.io/address-pool", "mbb-a"))
	fixture.Service(t, ns, "filler", fixture.Annotate("metallb.io/address-pool", "mbb-b"))
	before := waitSettled(t, ns, "mover", "bystander", "filler")
	if before["mover"].ips != "192.0.2.32" || before["filler"].ips != "192.0.2.36" {
		t.Fatalf("start: mover %+v, filler %+v; want 192.0.2.32 and 192.0.2.36", before["mover"], before["filler"])
	}
	history := recordAddresses(t, ns, "mover")

	steps := []struct {
		name        string
		annotations map[string]string
		ips, reason string
		message     string
	}{
		{"other pool", map[string]string{"metallb.io/address-pool": "mbb-b"},
			"192.0.2.37", assign.ReasonAssigned, `from pool "mbb-b"`},
		{"address in use", map[string]string{"metallb.io/address-pool": "mbb-b", "metallb.io/loadBalancerIPs": "192.0.2.36"},
			"192.0.2.37", assign.ReasonRequestedIPInUse, "keeping [192.0.2.37]"},
		{"pool that does not exist", map[string]string{"metallb.io/address-pool": "gone"},
			"", assign.ReasonNoMatchingPool, `"gone"`},
	}
	for _, step := range steps {
		setAnnotations(t, ns, "mover", step.annotations)
		var got map[string]observed
		fixture.WaitFor(t, "mover to follow step "+step.name, func() bool {
			got = observe(t, ns)
			return got["mover"].reason == step.reason && got["mover"].ips == step.ips
		})
		if !strings.Contains(got["mover"].message, step.message) {
			t.Errorf("step %s: message %q, want it to contain %q", step.name, got["mover"].message, step.message)
		}
		checkUnique(t, got)
		checkKept(t, map[string]observed{"bystander": before["bystander"], "filler": before["filler"]}, got)
	}
	waitEvent(t, ns, "mover", assign.EventClearAssignment)
	want := []string{"192.0.2.32", "192.0.2.37", ""}
	if got := history.distinct(); strings.Join(got, " -> ") != strings.Join(want, " -> ") {
		t.Errorf("mover showed %q, want %q: no empty step between two addresses", got, want)
	}
}

// TestNamespaceSelector serves a Service only while its namespace carries
// the label a pool selects: labelling the namespace gives it an address,
// removing the label takes the address away (it left every pool that may
// serve the Service), with a ClearAssignment event.
func TestNamespaceSelector(t *testing.T) {
	ns := fixture.Namespace(t)
	label := map[string]string{"steadylb.test/team": ns}
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "team-" + ns, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"203.0.113.32/30"},
			ServiceAllocation: &v1beta1.ServiceAllocation{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: label}}}}}
	if err := kube().Create(ctx, pool); err != nil {
		t.Fatalf("create pool: %v", err)
	}
	t.Cleanup(func() { _ = kube().Delete(ctx, pool) })
	startController(t)
	fixture.Service(t, ns, "svc")
	if got := waitSettled(t, ns, "svc"); got["svc"].reason != assign.ReasonNoMatchingPool {
		t.Fatalf("unlabelled namespace: svc = %+v, want NoMatchingPool", got["svc"])
	}

	setNamespaceLabels(t, ns, label)
	fixture.WaitFor(t, "svc to be served once its namespace is selected", func() bool {
		return observe(t, ns)["svc"].ips == "203.0.113.32"
	})

	setNamespaceLabels(t, ns, nil)
	fixture.WaitFor(t, "svc to lose its address with its namespace's label", func() bool {
		o := observe(t, ns)["svc"]
		return o.ips == "" && o.pool == "" && o.reason == assign.ReasonNoMatchingPool
	})
	waitEvent(t, ns, "svc", assign.EventClearAssignment)
}

// TestFamilyMismatch asks for an IPv6 address on a single-stack IPv4
// Service: the Service is told why, and a correct neighbour is served.
func TestFamilyMismatch(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "families", ns, "192.0.2.40/30", "2001:db8:40::/126")
	startController(t)
	fixture.Service(t, ns, "wrong-family", fixture.Annotate("metallb.io/loadBalancerIPs", "2001:db8:40::1"))
	fixture.Service(t, ns, "right-family", fixture.Annotate("metallb.io/loadBalancerIPs", "192.0.2.41"))
	got := waitSettled(t, ns, "wrong-family", "right-family")
	if o := got["wrong-family"]; o.ips != "" || o.reason != assign.ReasonInvalidRequest ||
		!strings.Contains(o.message, "2001:db8:40::1 is IPv6, but the service is single-stack IPv4") {
		t.Errorf("wrong-family = %+v, want no address, InvalidRequest naming the family", o)
	}
	if o := got["right-family"]; o.ips != "192.0.2.41" {
		t.Errorf("right-family = %+v, want 192.0.2.41", o)
	}
	waitEvent(t, ns, "wrong-family", assign.EventAllocationFailed)
}

func setAnnotations(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	svc := &corev1.Service{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatalf("get service %s: %v", name, err)
	}
	base := svc.DeepCopy()
	for k := range svc.Annotations {
		if strings.HasPrefix(k, "metallb.io/") && k != assign.AnnotationAllocatedFromPool {
			delete(svc.Annotations, k)
		}
	}
	for k, v := range annotations {
		svc.Annotations[k] = v
	}
	if err := kube().Patch(ctx, svc, client.MergeFrom(base)); err != nil {
		t.Fatalf("annotate service %s: %v", name, err)
	}
}

func setNamespaceLabels(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := kube().Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatalf("get namespace %s: %v", name, err)
	}
	ns.Labels = labels
	if err := kube().Update(ctx, ns); err != nil {
		t.Fatalf("label namespace %s: %v", name, err)
	}
}

// waitEvent waits for an event with the given reason about a Service.
func waitEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	waitEventSaying(t, ns, name, reason, "")
}

// waitEventSaying waits for an event with the given reason about a
// Service whose note contains note.
func waitEventSaying(t *testing.T, ns, name, reason, note string) {
	t.Helper()
	fixture.WaitFor(t, "event "+reason+" on "+name+" saying "+note, func() bool {
		var list eventsv1.EventList
		if err := kube().List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatalf("list events: %v", err)
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, note) {
				return true
			}
		}
		return false
	})
}

// addressHistory is every ingress a Service showed, in order, as a watch
// on the API server saw it.
type addressHistory struct {
	mu   sync.Mutex
	seen []string
}

// distinct returns the history without consecutive repeats.
func (h *addressHistory) distinct() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.seen {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// recordAddresses watches one Service until the test ends.
func recordAddresses(t *testing.T, ns, name string) *addressHistory {
	t.Helper()
	wc, err := client.NewWithWatch(testenv.Shared.Config, client.Options{Scheme: testenv.Shared.Scheme})
	if err != nil {
		t.Fatalf("create watching client: %v", err)
	}
	w, err := wc.Watch(ctx, &corev1.ServiceList{}, client.InNamespace(ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		t.Fatalf("watch service %s: %v", name, err)
	}
	h := &addressHistory{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if svc, ok := ev.Object.(*corev1.Service); ok {
				var ips []string
				for _, in := range svc.Status.LoadBalancer.Ingress {
					ips = append(ips, in.IP)
				}
				h.mu.Lock()
				h.seen = append(h.seen, strings.Join(ips, ","))
				h.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return h
}

// TestTypeChangeReleasesAndForeignClassIsIgnored turns a Service into a
// ClusterIP Service, which frees its address for the one waiting, and
// checks that a Service of another loadBalancerClass is never written.
func TestTypeChangeReleasesAndForeignClassIsIgnored(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "types", ns, "203.0.113.40/32")
	startController(t)
	fixture.Service(t, ns, "first")
	if got := waitSettled(t, ns, "first"); got["first"].ips != "203.0.113.40" {
		t.Fatalf("first = %+v, want 203.0.113.40", got["first"])
	}
	fixture.Service(t, ns, "waiting")
	foreign := fixture.Service(t, ns, "foreign", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") })
	if got := waitSettled(t, ns, "waiting"); got["waiting"].reason != assign.ReasonPoolExhausted {
		t.Fatalf("waiting = %+v, want PoolExhausted", got["waiting"])
	}

	svc := &corev1.Service{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: "first"}, svc); err != nil {
		t.Fatalf("get first: %v", err)
	}
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	svc.Spec.AllocateLoadBalancerNodePorts = nil
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	if err := kube().Update(ctx, svc); err != nil {
		t.Fatalf("make first a ClusterIP service: %v", err)
	}
	fixture.WaitFor(t, "waiting to get the address first gave up", func() bool {
		return observe(t, ns)["waiting"].ips == "203.0.113.40"
	})
	// As MetalLB does, what the controller wrote goes with the address.
	fixture.WaitFor(t, "first to lose steadylb's annotations and condition", func() bool {
		o := observe(t, ns)["first"]
		return o.pool == "" && o.record == "" && o.reason == ""
	})
	if o := observe(t, ns)["foreign"]; o.resourceVersion != foreign.ResourceVersion || o.ips != "" {
		t.Errorf("service of another class was written: %+v", o)
	}
}

func families(policy corev1.IPFamilyPolicy, fams ...corev1.IPFamily) fixture.ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = &policy
		s.Spec.IPFamilies = fams
	}
}

// TestDualStack serves Services by their family policy from pools of one
// and of both families: PreferDualStack takes what there is, RequireDualStack
// is refused by a pool of one family, and IPv6-first Services get their
// addresses in the same way.
func TestDualStack(t *testing.T) {
	ns := fixture.Namespace(t)
	dual := fixture.Annotate("metallb.io/address-pool", "dual-"+ns)
	v4only := fixture.Annotate("metallb.io/address-pool", "v4-"+ns)
	fixture.Pool(t, "dual-"+ns, ns, "192.0.2.64/31", "2001:db8:64::/127")
	fixture.Pool(t, "v4-"+ns, ns, "192.0.2.68/31")
	startController(t)
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	fixture.Service(t, ns, "prefer", dual, families(corev1.IPFamilyPolicyPreferDualStack, v4, v6))
	fixture.Service(t, ns, "require-v6-first", dual, families(corev1.IPFamilyPolicyRequireDualStack, v6, v4))
	fixture.Service(t, ns, "require-on-v4-pool", v4only, families(corev1.IPFamilyPolicyRequireDualStack, v4, v6))
	fixture.Service(t, ns, "prefer-on-v4-pool", v4only, families(corev1.IPFamilyPolicyPreferDualStack, v4, v6))
	fixture.Service(t, ns, "v6-single", dual, families(corev1.IPFamilyPolicySingleStack, v6))

	got := waitSettled(t, ns, "prefer", "require-v6-first", "require-on-v4-pool", "prefer-on-v4-pool", "v6-single")
	tests := []struct{ name, ips, reason string }{
		{"prefer", "192.0.2.64,2001:db8:64::", assign.ReasonAssigned},
		// Ingress lists addresses in address order, IPv4 first, whatever
		// the primary family: one order, whoever wrote it.
		{"require-v6-first", "192.0.2.65,2001:db8:64::1", assign.ReasonAssigned},
		{"require-on-v4-pool", "", assign.ReasonNoMatchingPool},
		{"prefer-on-v4-pool", "192.0.2.68", assign.ReasonAssigned},
		{"v6-single", "", assign.ReasonPoolExhausted},
	}
	for _, tt := range tests {
		if o := got[tt.name]; o.ips != tt.ips || o.reason != tt.reason {
			t.Errorf("%s = %+v, want ips %q reason %s", tt.name, o, tt.ips, tt.reason)
		}
	}
	checkUnique(t, got)
}
