package speaker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
)

// TestInvalidConfigurationKeepsTheLastValid: an invalid advertisement is
// reported in the node's ConfigurationState, naming object and field, and
// changes nothing else: what was announced stays, a new Service of a known
// pool is announced, and removing the bad object makes the state Valid.
func TestInvalidConfigurationKeepsTheLastValid(t *testing.T) {
	l := newLab(t, "a")
	pool := l.pool("lan", []string{"198.51.100.160/28"})
	l.service("web", []string{"198.51.100.161"}, nil)
	l.waitAnswered("198.51.100.161", "a")
	fixture.WaitFor(t, "ConfigurationState Valid", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationValid
	})
	st, _ := l.configurationState("a")
	wantLabels := map[string]string{v1beta1.LabelComponentType: "speaker", v1beta1.LabelNodeName: l.node("a")}
	if diff := cmp.Diff(wantLabels, st.Labels); diff != "" {
		t.Errorf("ConfigurationState labels (-want +got):\n%s", diff)
	}

	bad := l.advertisement("bad", v1beta1.L2AdvertisementSpec{IPAddressPools: []string{pool, pool}})
	want := fmt.Sprintf("L2Advertisement %q: spec.ipAddressPools[1]", bad.Name)
	fixture.WaitFor(t, "ConfigurationState Invalid naming the bad field", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
	})
	if v, _ := l.speakers["a"].gauge("metallb_k8s_client_config_stale_bool", nil); v != 1 {
		t.Errorf("metallb_k8s_client_config_stale_bool = %v, want 1", v)
	}
	l.service("api", []string{"198.51.100.162"}, nil)
	l.waitAnswered("198.51.100.162", "a")
	l.waitAnswered("198.51.100.161", "a")

	if err := kube().Delete(ctx, bad); err != nil {
		t.Fatalf("delete the bad advertisement: %v", err)
	}
	fixture.WaitFor(t, "ConfigurationState Valid again", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationValid && st.Status.ErrorSummary == ""
	})
	if v, _ := l.speakers["a"].gauge("metallb_k8s_client_config_stale_bool", nil); v != 0 {
		t.Errorf("metallb_k8s_client_config_stale_bool = %v after the fix, want 0", v)
	}
}

// TestMissingInterfaceIsReported: an advertisement listing an interface
// the host lacks is reported in the ConfigurationState; the interfaces
// that exist keep answering, and the ServiceL2Status names them.
func TestMissingInterfaceIsReported(t *testing.T) {
	l := newLab(t, "a")
	l.pool("lan", []string{"198.51.100.176/28"}, onInterfaces("eth1", "nosuch0"))
	key := l.service("web", []string{"198.51.100.177"}, nil)
	l.waitAnswered("198.51.100.177", "a")
	want := fmt.Sprintf(`L2Advertisement %q: spec.interfaces[1]: interface "nosuch0" does not exist on node %q`, l.id+"-lan", l.node("a"))
	fixture.WaitFor(t, "the missing interface in the ConfigurationState", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
	})
	fixture.WaitFor(t, "the ServiceL2Status to name eth1 alone", func() bool {
		list := l.statuses(key)
		return len(list) == 1 && cmp.Equal(list[0].Status.Interfaces, []v1beta1.InterfaceInfo{{Name: "eth1"}})
	})
}

func onInterfaces(names ...string) func(*v1beta1.L2AdvertisementSpec) {
	return func(s *v1beta1.L2AdvertisementSpec) { s.Interfaces = names }
}
