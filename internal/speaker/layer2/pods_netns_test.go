package layer2_test

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/internal/speaker/layer2"
	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/netns"
)

// events records what the Announcer reports.
type events struct {
	mu       sync.Mutex
	returned []string
	changed  int
}

func (e *events) carrier(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.returned = append(e.returned, name)
}

func (e *events) interfaces() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changed++
}

func (e *events) get() ([]string, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.returned...), e.changed
}

// TestPodLinksChangeNothing: a node starting and stopping pods, their
// veths created down, raised, flapped and deleted the ways CNIs do (ports
// of a cni0 bridge holding the pod network's gateway; Calico-style veths
// with a host route each), answers only on its LAN interface, reports no
// carrier return and no interface change, while a return on the LAN
// interface itself is still reported.
func TestPodLinksChangeNothing(t *testing.T) {
	var ev events
	l := newLabWith(t, layer2.Options{CarrierReturned: ev.carrier, InterfacesChanged: ev.interfaces})
	waitCarrier(t, l.node, "eth0")
	want := map[string][]string{"198.51.100.7": nil, "2001:db8::7": nil}
	wantAnswering := map[string][]string{"198.51.100.7": {"eth0"}, "2001:db8::7": {"eth0"}}
	if answering, _ := l.announce(t, want); !cmp.Equal(wantAnswering, answering) {
		t.Fatalf("answering = %v, want %v", answering, wantAnswering)
	}
	l.node.IP(t, "link", "add", "cni0", "type", "bridge")
	l.node.IP(t, "addr", "add", "10.244.1.1/24", "dev", "cni0")
	l.node.IP(t, "link", "set", "cni0", "up")

	// One Calico-style pod stays, to ask from.
	calico := startPod(t, l.node, "cali0", 1, false)
	for i := 1; i <= 20; i++ {
		pod := startPod(t, l.node, fmt.Sprintf("veth%d", i), i+1, i%2 == 0)
		hostEnd := fmt.Sprintf("veth%d", i)
		pod.IP(t, "link", "set", "eth0", "down")
		pod.IP(t, "link", "set", "eth0", "up")
		l.node.IP(t, "link", "del", hostEnd)
	}
	// The pods' links exist while rescans run (every 100 ms).
	if answering, _ := l.announce(t, want); !cmp.Equal(wantAnswering, answering) {
		t.Errorf("with pods on the node, answering = %v, want %v", answering, wantAnswering)
	}
	var p *l2probe.Prober
	if err := calico.Run(func() (err error) { p, err = l2probe.NewProber("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for _, addr := range []string{"198.51.100.7", "2001:db8::7"} {
		if got := answers(t, p, addr); len(got) != 0 {
			t.Errorf("%s answered to a pod on its veth by %v", addr, got)
		}
	}

	// The LAN interface's carrier returns: reported, and after every
	// pod event (the kernel sends link notifications in order).
	l.client.IP(t, "link", "set", "eth0", "down")
	l.client.IP(t, "link", "set", "eth0", "up")
	deadline := time.Now().Add(20 * time.Second)
	for {
		returned, _ := ev.get()
		if len(returned) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("eth0's carrier return was not reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	returned, changed := ev.get()
	if !cmp.Equal([]string{"eth0"}, returned) {
		t.Errorf("carrier returns reported: %v, want only [eth0]", returned)
	}
	if changed != 0 {
		t.Errorf("pods changed the answering interfaces %d times", changed)
	}
}

// startPod creates a pod namespace whose eth0 is a veth to hostEnd on
// node, as CNIs do: created inside the pod, the host end moved to the node
// and raised there, then a port of cni0 (bridged, the bridge plugin) or
// alone with a host route to the pod (Calico, Cilium). The pod's address
// is 10.244.1.<10+i>.
func startPod(t *testing.T, node *netns.NS, hostEnd string, i int, bridged bool) *netns.NS {
	t.Helper()
	pod := netns.New(t, "l2-pod")
	pod.IP(t, "link", "add", "eth0", "type", "veth", "peer", "name", hostEnd, "netns", node.Name)
	podIP := netip.AddrFrom4([4]byte{10, 244, 1, byte(10 + i)})
	node.IP(t, "link", "set", hostEnd, "up")
	if bridged {
		node.IP(t, "link", "set", hostEnd, "master", "cni0")
	} else {
		node.IP(t, "route", "add", podIP.String()+"/32", "dev", hostEnd, "scope", "link")
	}
	pod.IP(t, "addr", "add", podIP.String()+"/24", "dev", "eth0")
	pod.IP(t, "link", "set", "eth0", "up")
	return pod
}
