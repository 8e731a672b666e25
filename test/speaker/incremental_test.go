package speaker

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestOneChangeDecidesOnlyItsAddresses (invariant 10): with many Services
// announced, moving one Service's endpoint makes each speaker decide a
// handful of addresses again, not every address.
func TestOneChangeDecidesOnlyItsAddresses(t *testing.T) {
	const services = 40
	l := newLab(t, "a", "b")
	l.pool("lan", []string{"198.51.100.0/26"})
	keys := make([]types.NamespacedName, services)
	for i := range services {
		addr := fmt.Sprintf("198.51.100.%d", i+1)
		keys[i] = l.service(fmt.Sprintf("web-%d", i), []string{addr}, nil)
	}
	const addr = "198.51.100.50"
	key := l.service("moving", []string{addr}, []string{"a"}, localPolicy)
	l.waitAnswered(addr, "a")
	l.waitStatusNodes(key, "a")
	// The objects follow the answering in the background; their watch
	// events would count if they came after the baseline.
	for i := range services {
		a := fmt.Sprintf("198.51.100.%d", i+1)
		owner := l.owner(a, "a", "b")
		l.waitAnswered(a, owner)
		l.waitStatusNodes(keys[i], owner)
	}
	before := map[string]float64{}
	for _, n := range []string{"a", "b"} {
		before[n], _ = l.speakers[n].gauge("steadylb_speaker_addresses_decided_total", nil)
	}

	l.endpoints(key, ready(l.node("b"))...)
	l.waitAnswered(addr, "b")
	l.waitStatusNodes(key, "b")

	// The endpoint change, then the other node's ServiceL2Status coming and
	// going: each revisits the one address. A full recomputation would be
	// over 40.
	const most = 8
	for _, n := range []string{"a", "b"} {
		after, _ := l.speakers[n].gauge("steadylb_speaker_addresses_decided_total", nil)
		d := after - before[n]
		t.Logf("speaker %s decided %v addresses for the change", n, d)
		if d < 1 || d > most {
			t.Errorf("speaker %s decided %v addresses for one endpoint change, want 1 to %d", n, d, most)
		}
	}
}
