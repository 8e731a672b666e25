package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestInvalidPoolHarmsNothing adds a pool that overlaps a pool in use: the
// ConfigurationState names the bad object, and no Service is written.
func TestInvalidPoolHarmsNothing(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "good", ns, "198.51.100.64/30")
	startController(t)
	fixture.Service(t, ns, "a")
	fixture.Service(t, ns, "b")
	before := waitSettled(t, ns, "a", "b")

	fixture.Pool(t, "overlapping", ns, "198.51.100.66-198.51.100.70")
	state := &v1beta1.ConfigurationState{}
	fixture.WaitFor(t, "ConfigurationState to report the overlap", func() bool {
		err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "controller"}, state)
		return err == nil && state.Status.Result == v1beta1.ConfigurationInvalid
	})
	if !strings.Contains(state.Status.ErrorSummary, `IPAddressPool "overlapping"`) {
		t.Errorf("errorSummary = %q, want it to name the overlapping pool", state.Status.ErrorSummary)
	}
	fixture.Service(t, ns, "c")
	got := waitSettled(t, ns, "c")
	checkKept(t, before, got)
	checkUnique(t, got)
}

// TestInvalidConfigurationAtStart starts the controller on overlapping
// pools: it reports the overlap, stays unready and writes no Service until
// the configuration is fixed, then serves them.
func TestInvalidConfigurationAtStart(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "start-a", ns, "198.51.100.72/30")
	overlap := fixture.Pool(t, "start-overlap", ns, "198.51.100.74/31")
	created := map[string]observed{}
	for _, name := range []string{"a", "b"} {
		svc := fixture.Service(t, ns, name)
		created[name] = observed{resourceVersion: svc.ResourceVersion}
	}
	p := launchController(t)
	state := &v1beta1.ConfigurationState{}
	fixture.WaitFor(t, "ConfigurationState to name the overlapping pool", func() bool {
		err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "controller"}, state)
		return err == nil && state.Status.Result == v1beta1.ConfigurationInvalid &&
			strings.Contains(state.Status.ErrorSummary, `"start-overlap"`)
	})
	if p.ready() {
		t.Error("controller is ready on an invalid first configuration")
	}
	checkKept(t, created, observe(t, ns))

	if err := kube().Delete(ctx, overlap); err != nil {
		t.Fatalf("delete the overlapping pool: %v", err)
	}
	p.waitReady(t)
	got := waitSettled(t, ns, "a", "b")
	if got["a"].ips == "" || got["b"].ips == "" {
		t.Errorf("after the fix: a = %+v, b = %+v; want both served", got["a"], got["b"])
	}
}
