package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestRevertedPoolsAreValidAgain makes the configuration invalid with an
// overlapping pool and then deletes it, which brings back exactly the
// pools the controller runs on: the ConfigurationState must say Valid
// again (it stayed Invalid, and the stale metric 1, while the controller
// took the unchanged pools for nothing to do).
func TestRevertedPoolsAreValidAgain(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "revert-good", ns, "198.51.100.80/30")
	startController(t)
	fixture.Service(t, ns, "a")
	waitSettled(t, ns, "a")

	result := func() v1beta1.ConfigurationResult {
		state := &v1beta1.ConfigurationState{}
		if err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "controller"}, state); err != nil {
			return ""
		}
		return state.Status.Result
	}
	fixture.WaitFor(t, "ConfigurationState Valid", func() bool { return result() == v1beta1.ConfigurationValid })
	overlap := fixture.Pool(t, "revert-overlap", ns, "198.51.100.82/31")
	fixture.WaitFor(t, "ConfigurationState Invalid with the overlap", func() bool { return result() == v1beta1.ConfigurationInvalid })
	if err := kube().Delete(ctx, overlap); err != nil {
		t.Fatalf("delete the overlapping pool: %v", err)
	}
	fixture.WaitFor(t, "ConfigurationState Valid once the overlap is gone", func() bool { return result() == v1beta1.ConfigurationValid })
}
