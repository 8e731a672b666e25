package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestInvalidPoolHarmsNothing adds a pool that overlaps a pool in use: the
// ConfigurationState names the bad object, and no Service is written.
func TestInvalidPoolHarmsNothing(t *testing.T) {
	ns := newNamespace(t)
	createPool(t, "good", ns, "198.51.100.64/30")
	startController(t)
	createService(t, ns, "a")
	createService(t, ns, "b")
	before := waitSettled(t, ns, "a", "b")

	createPool(t, "overlapping", ns, "198.51.100.66-198.51.100.70")
	state := &v1beta1.ConfigurationState{}
	waitFor(t, "ConfigurationState to report the overlap", func() bool {
		err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "controller"}, state)
		return err == nil && state.Status.Result == v1beta1.ConfigurationInvalid
	})
	if !strings.Contains(state.Status.ErrorSummary, `IPAddressPool "overlapping"`) {
		t.Errorf("errorSummary = %q, want it to name the overlapping pool", state.Status.ErrorSummary)
	}
	createService(t, ns, "c")
	got := waitSettled(t, ns, "c")
	checkKept(t, before, got)
	checkUnique(t, got)
}
