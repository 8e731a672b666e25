package layer2_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadylb/steadylb/internal/speaker/layer2"
	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/netns"
)

// lab is an Announcer running in a node namespace, wired by veth to a
// client namespace that asks and listens with l2probe.
type lab struct {
	node, client *netns.NS
	a            *layer2.Announcer
	reg          *prometheus.Registry
	ctx          context.Context
}

// The node's own address on eth0, in the test subnets.
const (
	labNodeV4 = "198.51.100.50"
	labNodeV6 = "2001:db8::50"
)

func newLab(t *testing.T) *lab { return newLabWith(t, layer2.Options{}) }

// newLabWith starts the Announcer with opts, its Registerer, NodeAddresses
// and a short RescanInterval filled in.
func newLabWith(t *testing.T, opts layer2.Options) *lab {
	t.Helper()
	l := &lab{node: netns.New(t, "l2-node"), client: netns.New(t, "l2-cli"), reg: prometheus.NewRegistry()}
	netns.Veth(t, l.node, "eth0", l.client, "eth0")
	l.node.IP(t, "addr", "add", labNodeV4+"/24", "dev", "eth0")
	l.node.IP(t, "addr", "add", labNodeV6+"/64", "dev", "eth0", "nodad")
	l.client.IP(t, "addr", "add", "198.51.100.100/24", "dev", "eth0")
	l.client.WaitLinkLocal(t, "eth0")

	ctx, cancel := context.WithCancel(context.Background())
	l.ctx = ctx
	opts.Registerer = l.reg
	opts.NodeAddresses = []netip.Addr{netip.MustParseAddr(labNodeV4)}
	// A short rescan so the test of an interface appearing is quick.
	opts.RescanInterval = 100 * time.Millisecond
	l.a = layer2.NewAnnouncer(testr.New(t), opts)
	done := make(chan error, 1)
	// Start runs on a thread inside the node namespace: its rescans open
	// sockets there.
	go func() { done <- l.node.Run(func() error { return l.a.Start(ctx) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return l
}

// announce calls Announce from inside the node namespace.
func (l *lab) announce(t *testing.T, want map[string][]string) (map[string][]string, []string) {
	t.Helper()
	w := map[netip.Addr][]string{}
	for s, names := range want {
		w[netip.MustParseAddr(s)] = names
	}
	var answering map[netip.Addr][]string
	var missing []string
	if err := l.node.Run(func() error {
		answering, missing = l.a.Announce(l.ctx, w)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for addr, names := range answering {
		got[addr.String()] = names
	}
	return got, missing
}

func (l *lab) prober(t *testing.T, ifname string) *l2probe.Prober {
	t.Helper()
	var p *l2probe.Prober
	if err := l.client.Run(func() (err error) { p, err = l2probe.NewProber(ifname); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func (l *lab) listener(t *testing.T, ifname string) *l2probe.Listener {
	t.Helper()
	var ls *l2probe.Listener
	if err := l.client.Run(func() (err error) { ls, err = l2probe.Listen(l.ctx, ifname); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	return ls
}

// answers asks for addr once and returns the distinct MACs that answered.
func answers(t *testing.T, p *l2probe.Prober, addr string) []string {
	t.Helper()
	got, err := p.Ask(context.Background(), netip.MustParseAddr(addr), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var macs []string
	for _, a := range got {
		macs = append(macs, a.MAC.String())
	}
	return macs
}

func withTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestRealPackets runs the Announcer on real packet sockets: a client in
// another namespace sends real ARP requests and neighbor solicitations and
// listens for the announcements.
func TestRealPackets(t *testing.T) {
	l := newLab(t)
	p := l.prober(t, "eth0")
	heard := l.listener(t, "eth0")
	nodeMAC := l.node.HardwareAddr(t, "eth0")
	node := []string{nodeMAC.String()}

	answering, missing := l.announce(t, map[string][]string{
		"198.51.100.1": nil,
		"198.51.100.2": {"eth0"},
		"198.51.100.3": {"nope"},
		"2001:db8::1":  nil,
		"2001:db8::2":  {"eth0", "nope"},
	})
	wantAnswering := map[string][]string{
		"198.51.100.1": {"eth0"}, "198.51.100.2": {"eth0"},
		"2001:db8::1": {"eth0"}, "2001:db8::2": {"eth0"},
	}
	if d := cmp.Diff(wantAnswering, answering); d != "" {
		t.Errorf("answering (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"nope"}, missing); d != "" {
		t.Errorf("missing (-want +got):\n%s", d)
	}

	t.Run("takeover is announced", func(t *testing.T) {
		ctx := withTimeout(t)
		for _, addr := range []string{"198.51.100.1", "198.51.100.2", "2001:db8::1", "2001:db8::2"} {
			if _, err := heard.Wait(ctx, l2probe.ForMAC(netip.MustParseAddr(addr), nodeMAC)); err != nil {
				t.Errorf("no announcement of %s by %s: %v", addr, nodeMAC, err)
			}
		}
	})
	t.Run("announced addresses are answered with the node's MAC", func(t *testing.T) {
		for _, addr := range []string{"198.51.100.1", "198.51.100.2", "2001:db8::1", "2001:db8::2"} {
			if d := cmp.Diff(node, answers(t, p, addr)); d != "" {
				t.Errorf("%s answered by (-want +got):\n%s", addr, d)
			}
		}
	})
	t.Run("other addresses are not", func(t *testing.T) {
		for _, addr := range []string{"198.51.100.3", "198.51.100.4", "2001:db8::3"} {
			if got := answers(t, p, addr); len(got) != 0 {
				t.Errorf("%s answered by %v", addr, got)
			}
		}
	})
	t.Run("solicited-node groups are joined", func(t *testing.T) {
		groups := l.node.IP(t, "-6", "maddr", "show", "dev", "eth0")
		for _, g := range []string{"ff02::1:ff00:1", "ff02::1:ff00:2"} {
			if !strings.Contains(groups, g) {
				t.Errorf("eth0 is not in %s:\n%s", g, groups)
			}
		}
	})
	t.Run("removed addresses fall silent at once", func(t *testing.T) {
		l.announce(t, map[string][]string{"198.51.100.1": nil, "2001:db8::1": nil})
		for _, addr := range []string{"198.51.100.2", "2001:db8::2"} {
			if got := answers(t, p, addr); len(got) != 0 {
				t.Errorf("removed %s still answered by %v", addr, got)
			}
		}
		for _, addr := range []string{"198.51.100.1", "2001:db8::1"} {
			if d := cmp.Diff(node, answers(t, p, addr)); d != "" {
				t.Errorf("kept %s answered by (-want +got):\n%s", addr, d)
			}
		}
		if groups := l.node.IP(t, "-6", "maddr", "show", "dev", "eth0"); strings.Contains(groups, "ff02::1:ff00:2") {
			t.Errorf("eth0 still in the removed address's group:\n%s", groups)
		}
	})
	t.Run("metrics count the questions", func(t *testing.T) {
		mfs, err := l.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]int{}
		for _, mf := range mfs {
			names[mf.GetName()] = len(mf.GetMetric())
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() < 1 {
					t.Errorf("%s{ip=%s} = %g, want at least 1", mf.GetName(), m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
				}
			}
		}
		// One series per address still announced.
		want := map[string]int{"metallb_layer2_requests_received": 2, "metallb_layer2_responses_sent": 2, "metallb_layer2_gratuitous_sent": 2}
		if d := cmp.Diff(want, names); d != "" {
			t.Errorf("series per metric (-want +got):\n%s", d)
		}
	})
}

// TestRealInterfaceAppears: an address restricted to an interface that
// does not exist yet is answered once it is created, and only there.
func TestRealInterfaceAppears(t *testing.T) {
	l := newLab(t)
	p0 := l.prober(t, "eth0")
	want := map[string][]string{"198.51.100.5": {"eth1"}, "2001:db8::5": {"eth1"}, "198.51.100.6": nil}
	answering, missing := l.announce(t, want)
	if d := cmp.Diff(map[string][]string{"198.51.100.6": {"eth0"}}, answering); d != "" {
		t.Errorf("answering before eth1 exists (-want +got):\n%s", d)
	}
	if !slices.Equal(missing, []string{"eth1"}) {
		t.Errorf("missing before eth1 exists = %v, want [eth1]", missing)
	}

	netns.Veth(t, l.node, "eth1", l.client, "eth1")
	l.client.WaitLinkLocal(t, "eth1")
	p1 := l.prober(t, "eth1")
	eth1MAC := l.node.HardwareAddr(t, "eth1")
	ctx := withTimeout(t)
	for _, addr := range []string{"198.51.100.5", "2001:db8::5"} {
		got, err := p1.AwaitNewMAC(ctx, netip.MustParseAddr(addr), nil, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("%s never answered on eth1: %v", addr, err)
		}
		if !slices.Equal(got.MAC, eth1MAC) {
			t.Errorf("%s answered on eth1 by %s, want %s", addr, got.MAC, eth1MAC)
		}
		if got := answers(t, p0, addr); len(got) != 0 {
			t.Errorf("%s, allowed on eth1 only, answered on eth0 by %v", addr, got)
		}
	}
	// The unrestricted address stays on eth0, its subnet's link: eth1
	// has no address there.
	if got := answers(t, p1, "198.51.100.6"); len(got) != 0 {
		t.Errorf("198.51.100.6 answered on eth1, which is not on its subnet, by %v", got)
	}
	answering, missing = l.announce(t, want)
	if d := cmp.Diff(map[string][]string{"198.51.100.5": {"eth1"}, "2001:db8::5": {"eth1"}, "198.51.100.6": {"eth0"}}, answering); d != "" || len(missing) != 0 {
		t.Errorf("after eth1 appeared: missing %v, answering (-want +got):\n%s", missing, d)
	}
}

// TestCarrierReturns: the watch reports an interface whose carrier comes
// back (its veth peer set down, then up again), and only then.
func TestCarrierReturns(t *testing.T) {
	netns.Require(t)
	node, client := netns.New(t, "l2-node"), netns.New(t, "l2-cli")
	netns.Veth(t, node, "eth0", client, "eth0")
	// Opened once the carrier is up, so the first carrier is not taken
	// for a return.
	waitCarrier(t, node, "eth0")
	var w *layer2.CarrierWatch
	if err := node.Run(func() (err error) { w, err = layer2.OpenCarrierWatch(); return err }); err != nil {
		t.Fatal(err)
	}
	returned := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	answering := func(int) bool { return true }
	go func() { done <- w.Run(ctx, answering, nil, nil, func(name string) { returned <- name }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	client.IP(t, "link", "set", "eth0", "down")
	client.IP(t, "link", "set", "eth0", "up")
	select {
	case name := <-returned:
		if name != "eth0" {
			t.Errorf("carrier returned on %q, want eth0", name)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no carrier return reported for eth0")
	}
}

// waitCarrier waits until ifname in n has its carrier.
func waitCarrier(t *testing.T, n *netns.NS, ifname string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(n.IP(t, "link", "show", "dev", ifname), "LOWER_UP") {
		if time.Now().After(deadline) {
			t.Fatalf("%s in %s has no carrier", ifname, n.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
