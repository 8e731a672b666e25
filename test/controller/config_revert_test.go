package controller

import (
	"context"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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

// TestConfigurationStateOutlivesAStaleCache: a configuration made invalid
// and fixed before the controller's cache saw its Invalid report is
// reported Valid again. The controller's reads of the ConfigurationState
// return the copy from before the report throughout (its cache had not
// seen its own write); a controller that compared its verdict with that
// copy took the fix for already written and left Invalid standing.
func TestConfigurationStateOutlivesAStaleCache(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "stale-good", ns, "198.51.100.88/30")
	result := func() (v1beta1.ConfigurationState, bool) {
		state := v1beta1.ConfigurationState{}
		err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "controller"}, &state)
		return state, err == nil
	}
	var held atomic.Pointer[v1beta1.ConfigurationState]
	runInProcess(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if st, ok := obj.(*v1beta1.ConfigurationState); ok {
			if h := held.Load(); h != nil && key.Name == h.Name && key.Namespace == h.Namespace {
				h.DeepCopyInto(st)
				return nil
			}
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	fixture.WaitFor(t, "ConfigurationState Valid", func() bool {
		st, ok := result()
		return ok && st.Status.Result == v1beta1.ConfigurationValid
	})
	before, _ := result()
	held.Store(&before)

	overlap := fixture.Pool(t, "stale-overlap", ns, "198.51.100.90/31")
	fixture.WaitFor(t, "ConfigurationState Invalid with the overlap", func() bool {
		st, ok := result()
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid
	})
	if err := kube().Delete(ctx, overlap); err != nil {
		t.Fatalf("delete the overlapping pool: %v", err)
	}
	fixture.WaitFor(t, "ConfigurationState Valid again, though the controller's reads never saw it Invalid", func() bool {
		st, ok := result()
		return ok && st.Status.Result == v1beta1.ConfigurationValid
	})
}
