package controller

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// replaceForce runs `kubectl replace --force` on a Service with its own
// manifest, as a Helm or Argo CD replace does: the Service is deleted and
// created again, metadata kept, status gone.
func replaceForce(t *testing.T, ns, name string) {
	t.Helper()
	var manifest, stderr bytes.Buffer
	get := testenv.Shared.KubectlCmd("get", "service", "-n", ns, name, "-o", "yaml")
	get.Stdout, get.Stderr = &manifest, &stderr
	if err := get.Run(); err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, stderr.String())
	}
	replace := testenv.Shared.KubectlCmd("replace", "--force", "-f", "-")
	replace.Stdin, replace.Stderr = &manifest, &stderr
	if out, err := replace.Output(); err != nil {
		t.Fatalf("kubectl replace --force: %v\n%s%s", err, out, stderr.String())
	}
}

// backup deletes a Service and creates it again from a copy
// taken now, without status or cluster IPs, as a backup restore (Velero)
// does. It returns the copy, to be created with create.
func backup(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	if err := kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatalf("get service %s: %v", name, err)
	}
	if err := kube().Delete(ctx, svc); err != nil {
		t.Fatalf("delete service %s: %v", name, err)
	}
	fixture.WaitFor(t, name+" to be gone", func() bool {
		return kube().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{}) != nil
	})
	saved := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: svc.Labels, Annotations: svc.Annotations}, Spec: svc.Spec}
	saved.Spec.ClusterIP, saved.Spec.ClusterIPs = "", nil
	return saved
}

func restore(t *testing.T, saved *corev1.Service) {
	t.Helper()
	if err := kube().Create(ctx, saved.DeepCopy()); err != nil {
		t.Fatalf("restore service %s: %v", saved.Name, err)
	}
}

// TestRecordBringsAddressesBack: a Service that comes back without status
// but with its allocation record gets exactly the recorded addresses back,
// while the controller runs and across a restart, before any pending
// Service is served; a record naming an address someone else now holds is
// ignored and reported; a restart writes nothing.
func TestRecordBringsAddressesBack(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "recall", ns, "203.0.113.208/29")
	p := startController(t)
	fixture.Services(t, ns, "s", 3)
	got := waitSettled(t, ns, "s-0", "s-1", "s-2")
	checkOutcomes(t, got, []outcome{
		{"s-0", "203.0.113.208", assign.ReasonAssigned, ""},
		{"s-1", "203.0.113.209", assign.ReasonAssigned, ""},
		{"s-2", "203.0.113.210", assign.ReasonAssigned, ""},
	})

	// While running: kubectl replace --force gives s-1 its address back
	// rather than the lowest free one (.211).
	replaceForce(t, ns, "s-1")
	fixture.WaitFor(t, "s-1 to be restored from its record", func() bool {
		o := observe(t, ns)["s-1"]
		return o.ips != "" && o.reason != ""
	})
	checkOutcomes(t, observe(t, ns), []outcome{{"s-1", "203.0.113.209", assign.ReasonAssigned, ""}})
	waitEventSaying(t, ns, "s-1", assign.EventIPAllocated, "restored from "+assign.AnnotationAllocation)

	// Across a restart: s-2 is restored from a backup while the controller
	// is down, after a new Service was created. The new one is older and
	// would take the lowest free address (.210, s-2's) if it were served
	// first; the barrier gives recorded addresses back first.
	p.Kill()
	saved := backup(t, ns, "s-2")
	fixture.Service(t, ns, "newcomer")
	restore(t, saved)
	p = startController(t)
	got = waitSettled(t, ns, "s-2", "newcomer")
	checkOutcomes(t, got, []outcome{
		{"s-2", "203.0.113.210", assign.ReasonAssigned, ""},
		{"newcomer", "203.0.113.211", assign.ReasonAssigned, ""},
	})
	waitEventSaying(t, ns, "s-2", assign.EventIPAllocated, "restored from")

	// A record naming an address another Service took meanwhile is
	// ignored, with an event; the Service gets a fresh address.
	saved = backup(t, ns, "s-0")
	fixture.Service(t, ns, "squatter", fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.208"))
	waitSettled(t, ns, "squatter")
	restore(t, saved)
	got = waitSettled(t, ns, "s-0")
	checkOutcomes(t, got, []outcome{
		{"squatter", "203.0.113.208", assign.ReasonAssigned, ""},
		{"s-0", "203.0.113.212", assign.ReasonAssigned, ""},
	})
	waitEventSaying(t, ns, "s-0", assign.EventRecordIgnored, "(RequestedIPInUse)")
	if r := got["s-0"].record; !strings.Contains(r, "203.0.113.212") {
		t.Errorf("s-0's record = %q, want it to name its new address", r)
	}

	// A record written by hand, in a manifest, is honoured the same way.
	fixture.Service(t, ns, "by-hand", fixture.Annotate(assign.AnnotationAllocation, `{"ips":["203.0.113.215"]}`))
	got = waitSettled(t, ns, "by-hand")
	checkOutcomes(t, got, []outcome{{"by-hand", "203.0.113.215", assign.ReasonAssigned, ""}})
	waitEventSaying(t, ns, "by-hand", assign.EventIPAllocated, "restored from")
	checkUnique(t, got)

	p.Kill()
	startController(t)
	checkKept(t, got, observe(t, ns))
}

// TestIgnoredRecordWaitsItsTurn: at startup, a Service restored with an
// allocation record that names an address another Service holds is
// ignored (AllocationRecordIgnored) and served as if it had no record:
// with the pending Services, by age. The pending Service created before
// it takes the last free address; a record that can be honoured still
// comes back before both. Names sort opposite to ages, so neither name
// order nor being restored can produce the right outcome.
func TestIgnoredRecordWaitsItsTurn(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "turn", ns, "203.0.113.136/30")
	p := startController(t)
	for _, name := range []string{"m-holder", "n-holder", "b-valid"} {
		fixture.Service(t, ns, name)
		waitSettled(t, ns, name)
	}
	before := observe(t, ns)
	p.Kill()

	saved := backup(t, ns, "b-valid")
	pending := fixture.Service(t, ns, "z-pending")
	fixture.Later(t, pending)
	restored := fixture.Service(t, ns, "a-restored",
		fixture.Annotate(assign.AnnotationAllocation, `{"ips":["`+before["m-holder"].ips+`"]}`))
	fixture.Later(t, restored)
	restore(t, saved)

	startController(t)
	got := waitSettled(t, ns, "b-valid", "z-pending", "a-restored")
	checkOutcomes(t, got, []outcome{
		{"m-holder", "203.0.113.136", assign.ReasonAssigned, ""},
		{"n-holder", "203.0.113.137", assign.ReasonAssigned, ""},
		{"b-valid", "203.0.113.138", assign.ReasonAssigned, ""},
		{"z-pending", "203.0.113.139", assign.ReasonAssigned, ""},
		{"a-restored", "", assign.ReasonPoolExhausted, ""},
	})
	waitEventSaying(t, ns, "a-restored", assign.EventRecordIgnored, "(RequestedIPInUse)")
	checkUnique(t, got)
}
