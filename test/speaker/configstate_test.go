package speaker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/test/fixture"
)

// heldStates is a speaker's cache whose ConfigurationState can be held at
// a copy: a cache that has not seen the speaker's own latest writes yet,
// as an informer lags behind on a busy machine.
type heldStates struct {
	cache.Cache
	mu   sync.Mutex
	held *v1beta1.ConfigurationState
}

func (h *heldStates) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	if st, ok := obj.(*v1beta1.ConfigurationState); ok && held != nil && held.Name == key.Name {
		held.DeepCopyInto(st)
		return nil
	}
	return h.Cache.Get(ctx, key, obj, opts...)
}

func (h *heldStates) hold(st *v1beta1.ConfigurationState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = st
}

// TestConfigurationStateOutlivesAStaleCache: an error reported and fixed
// before the speaker's cache saw the report is cleared all the same. The
// cache holds the state from before the report throughout (the speaker
// wrote Invalid, then Valid; its cache still says Valid); a speaker that
// compared its verdict with the cache left Invalid standing (this test
// failed with it, then on make test's busy machine now and then in
// TestBGPStatusFollowsSessions).
func TestConfigurationStateOutlivesAStaleCache(t *testing.T) {
	l := prepareBGPLab(t, "a")
	states := &heldStates{}
	l.newCache = func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		states.Cache = c
		return states, err
	}
	l.startAll()
	r1 := l.bgpPeer("r1", 64500, "203.0.113.1", nil, nil)
	valid := func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationValid
	}
	fixture.WaitFor(t, "the ConfigurationState valid", valid)
	before, _ := l.configurationState("a")
	states.hold(&before)

	l.routers["a"].setFaults(bgp.Fault{Session: r1, Field: "spec.bfdProfile", Err: "no route to 203.0.113.1"})
	want := fmt.Sprintf(`BGPPeer %q: spec.bfdProfile: failing, retried every 1s: no route to 203.0.113.1`, r1)
	fixture.WaitFor(t, "the fault on the ConfigurationState", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
	})
	l.routers["a"].setFaults()
	fixture.WaitFor(t, "the ConfigurationState valid again, though the cache never saw it invalid", valid)
}
