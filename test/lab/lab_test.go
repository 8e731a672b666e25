package lab_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/testenv"
)

func TestMain(m *testing.M) {
	os.Exit(lab.Run(m, lab.MainOptions{Lab: lab.Options{Nodes: 2}}))
}

// TestSegment: the client reaches every node on segment a, the nodes'
// own kernels answering ARP and NDP for their addresses with their MACs.
func TestSegment(t *testing.T) {
	l := lab.Require(t)
	p := l.Client.Prober(t, lab.SegmentA)
	for _, n := range l.Nodes {
		for _, addr := range []netip.Addr{n.IPv4, n.IPv6} {
			got, err := p.Ask(t.Context(), addr, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].MAC.String() != n.MAC(lab.SegmentA).String() {
				t.Errorf("%s on %s answered by %v, want %s", addr, n.Name, got, n.MAC(lab.SegmentA))
			}
		}
	}
}

// TestCutLink: a cut link passes nothing until it is restored.
func TestCutLink(t *testing.T) {
	l := lab.Require(t)
	n := l.Nodes[0]
	p := l.Client.Prober(t, lab.SegmentA)
	if err := n.CutLink(lab.SegmentA); err != nil {
		t.Fatal(err)
	}
	got, err := p.Ask(t.Context(), n.IPv4, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("a cut node answered: %v", got)
	}
	if err := n.RestoreLink(lab.SegmentA); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AwaitAnswer(withTimeout(t, 10*time.Second), n.IPv4, 100*time.Millisecond, func(net.HardwareAddr) bool { return true }); err != nil {
		t.Errorf("no answer after the link was restored: %v", err)
	}
}

// TestAPIFromNode: inside a node namespace the suite's kubeconfig address
// (127.0.0.1:<port>) is the API server, through the forwarder, and a cut
// holds requests until it is restored.
func TestAPIFromNode(t *testing.T) {
	l := lab.Require(t)
	n := l.Nodes[1]
	cfg := rest.CopyConfig(testenv.Shared.Config)
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := n.NS.Run(func() (err error) {
			var d net.Dialer
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Shared.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	nodeNames := func(ctx context.Context) ([]string, error) {
		var list corev1.NodeList
		if err := c.List(ctx, &list); err != nil {
			return nil, err
		}
		var names []string
		for _, item := range list.Items {
			names = append(names, item.Name)
		}
		slices.Sort(names)
		return names, nil
	}
	got, err := nodeNames(t.Context())
	if err != nil {
		t.Fatalf("list nodes from %s: %v", n.Name, err)
	}
	if want := []string{"node-1", "node-2"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %v, want %v", got, want)
	}

	n.CutAPI()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err = nodeNames(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with the API cut, list nodes: %v, want a deadline error", err)
	}
	n.RestoreAPI()
	if _, err := nodeNames(withTimeout(t, 10*time.Second)); err != nil {
		t.Errorf("after the API was restored: %v", err)
	}
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestPod: a pod started by the CNI bridge plugin has an address from its
// node's pod network on eth0, a veth port of cni0 on the node, a process
// run in it sees its own interface, the node reaches it, and Close
// removes the port.
func TestPod(t *testing.T) {
	l := lab.Require(t)
	lab.RequirePods(t)
	n := l.Nodes[1]
	p := n.Pod(t, "")
	if !n.PodCIDR4().Contains(p.IPv4) || !n.PodCIDR6().Contains(p.IPv6) {
		t.Fatalf("pod addresses %s, %s outside %s, %s", p.IPv4, p.IPv6, n.PodCIDR4(), n.PodCIDR6())
	}
	if out := n.NS.IP(t, "-o", "link", "show", "dev", p.HostVeth); !strings.Contains(out, "master "+lab.PodBridge) {
		t.Errorf("host veth %s is not a port of %s: %s", p.HostVeth, lab.PodBridge, out)
	}
	name, args := p.Command("ip", "-o", "addr", "show", "dev", lab.PodInterface)
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), p.IPv4.String()+"/24") || !strings.Contains(string(out), p.IPv6.String()+"/64") {
		t.Errorf("inside the pod, %s: %v: %s", lab.PodInterface, err, out)
	}
	for _, addr := range []netip.Addr{p.IPv4, p.IPv6} {
		assertDial(t, n, p, addr)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := n.NS.Exec("link", "show", "dev", p.HostVeth); err == nil {
		t.Errorf("host veth %s still there after Close: %s", p.HostVeth, out)
	}
}

// assertDial connects from the node to a listener inside the pod on addr.
func assertDial(t *testing.T, n *lab.Node, p *lab.Pod, addr netip.Addr) {
	t.Helper()
	var ln net.Listener
	if err := p.NS.Run(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
		return err
	}); err != nil {
		t.Fatalf("listen in the pod on %s: %v", addr, err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	if err := n.NS.Run(func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Errorf("from %s to the pod at %s: %v", n.Name, ln.Addr(), err)
	}
}
