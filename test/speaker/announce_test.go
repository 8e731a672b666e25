package speaker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestElectsOneNodePerAddress: three speakers, one live set; each address
// is answered by exactly the node the hash elects, and only that node
// holds its Service's ServiceL2Status.
func TestElectsOneNodePerAddress(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.0/28"})
	owners := map[string]bool{}
	for i := range 6 {
		addr := fmt.Sprintf("198.51.100.%d", i+1)
		key := l.service(fmt.Sprintf("web-%d", i), []string{addr}, nil)
		owner := l.owner(addr, "a", "b", "c")
		owners[owner] = true
		l.waitAnswered(addr, owner)
		l.waitStatusNodes(key, owner)
	}
	if len(owners) < 2 {
		t.Logf("six addresses all went to one node (%v): possible, but the spread is not exercised", owners)
	}
}

// TestServiceL2StatusShape: the object is MetalLB's shape, the event its
// text, the metric its labels; all go away when the Service does.
func TestServiceL2StatusShape(t *testing.T) {
	l := newLab(t, "a")
	l.pool("lan", []string{"198.51.100.16/28"})
	key := l.service("web", []string{"198.51.100.17"}, []string{"a"})
	l.waitAnswered("198.51.100.17", "a")
	l.waitStatusNodes(key, "a")
	node := l.node("a")

	var st v1beta1.ServiceL2Status
	fixture.WaitFor(t, "the ServiceL2Status status to be written", func() bool {
		list := l.statuses(key)
		if len(list) != 1 {
			return false
		}
		st = list[0]
		return st.Status.Node != ""
	})
	if st.Namespace != testenv.Namespace || !strings.HasPrefix(st.Name, l2status.NamePrefix) || st.GenerateName != l2status.NamePrefix {
		t.Errorf("object %s/%s (generateName %q), want generated %q... in %s", st.Namespace, st.Name, st.GenerateName, l2status.NamePrefix, testenv.Namespace)
	}
	wantLabels := map[string]string{v1beta1.LabelNode: node, v1beta1.LabelServiceName: key.Name, v1beta1.LabelServiceNamespace: key.Namespace}
	if diff := cmp.Diff(wantLabels, st.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantStatus := v1beta1.MetalLBServiceL2Status{Node: node, ServiceName: key.Name, ServiceNamespace: key.Namespace,
		Interfaces: []v1beta1.InterfaceInfo{{Name: "eth0"}}}
	if diff := cmp.Diff(wantStatus, st.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got := st.Annotations[l2status.AnnotationAddresses]; got != "198.51.100.17" {
		t.Errorf("annotation %s = %q, want the address", l2status.AnnotationAddresses, got)
	}

	e := l.waitEvent(key, "nodeAssigned", "")
	if want := fmt.Sprintf("announcing from node %q with protocol %q", node, "layer2"); e.Note != want || e.Type != "Normal" {
		t.Errorf("nodeAssigned event: %s %q, want Normal %q", e.Type, e.Note, want)
	}
	series := map[string]string{"service": key.String(), "protocol": "layer2", "node": node, "ip": "198.51.100.17"}
	if v, ok := l.speakers["a"].gauge("metallb_speaker_announced", series); !ok || v != 1 {
		t.Errorf("metallb_speaker_announced%v = %v (present %v), want 1", series, v, ok)
	}
	if v, _ := l.speakers["a"].gauge("metallb_k8s_client_config_loaded_bool", nil); v != 1 {
		t.Errorf("metallb_k8s_client_config_loaded_bool = %v, want 1", v)
	}

	l.deleteService(key)
	l.waitAnswered("198.51.100.17", "")
	l.waitStatusNodes(key)
	fixture.WaitFor(t, "the metric series to go", func() bool {
		_, ok := l.speakers["a"].gauge("metallb_speaker_announced", series)
		return !ok
	})
	// Stopping happened in the Announce call, before the object went: the
	// journal's last call for the node lacks the address.
	if i := l.journal.firstCall(0, node, mustAddr("198.51.100.17"), false); i < 0 {
		t.Error("no Announce call without the address was recorded")
	}
}

// TestSharedAddressElectsOneNode: Services sharing an address elect one
// node, from the intersection of their candidates; the node holds an
// object for each.
func TestSharedAddressElectsOneNode(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.32/28"})
	const addr = "198.51.100.33"
	tcp := l.service("dns-tcp", []string{addr}, []string{"a", "b"}, localPolicy)
	udp := l.service("dns-udp", []string{addr}, []string{"b", "c"}, localPolicy)
	l.waitAnswered(addr, "b")
	l.waitStatusNodes(tcp, "b")
	l.waitStatusNodes(udp, "b")
}

// TestDualStackServiceHasAnOwnerPerAddress: a Service's two addresses are
// elected separately; each owner's object names only its address, and
// neither waits for the other.
func TestDualStackServiceHasAnOwnerPerAddress(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.48/28", "2001:db8:30::/124"})
	// Find a pair with different owners; the hash decides, so look.
	var v4, v6 string
	for i := 1; i < 15 && v4 == ""; i++ {
		for j := 1; j < 15; j++ {
			a, b := fmt.Sprintf("198.51.100.%d", 48+i), fmt.Sprintf("2001:db8:30::%x", j)
			if l.owner(a, "a", "b", "c") != l.owner(b, "a", "b", "c") {
				v4, v6 = a, b
				break
			}
		}
	}
	key := l.service("web", []string{v4, v6}, nil)
	o4, o6 := l.owner(v4, "a", "b", "c"), l.owner(v6, "a", "b", "c")
	l.waitAnswered(v4, o4)
	l.waitAnswered(v6, o6)
	l.waitStatusNodes(key, o4, o6)
	got := map[string]string{}
	for _, st := range l.statuses(key) {
		got[st.Labels[v1beta1.LabelNode]] = st.Annotations[l2status.AnnotationAddresses]
	}
	want := map[string]string{l.node(o4): v4, l.node(o6): mustAddr(v6).String()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("addresses per node (-want +got):\n%s", diff)
	}
}
