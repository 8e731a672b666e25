package packets

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/lab"
)

// The router's AS; the nodes are in 64500, so the sessions are eBGP.
const routerAS, nodeAS = 64512, 64500

// routerConfig is bgpd's configuration in the lab's client namespace: a
// neighbor per lab node at its address of family ("ipv4" or "ipv6"), no
// policy, up to 16 paths per prefix kept.
func routerConfig(l *lab.Lab, family string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp network import-check\n", routerAS, lab.ClientIPv4)
	b.WriteString(" bgp bestpath as-path multipath-relax\n")
	neighbors := ipsOf(family, l.Nodes...)
	for _, ip := range neighbors {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n", ip, nodeAS)
	}
	fmt.Fprintf(&b, " address-family %s unicast\n", family)
	if family == "ipv6" {
		// FRR activates its neighbors for IPv4 unicast only, by default.
		for _, ip := range neighbors {
			fmt.Fprintf(&b, "  neighbor %s activate\n", ip)
		}
	}
	b.WriteString("  maximum-paths 16\n exit-address-family\n")
	return b.String()
}

// nextHops are the next hops of FRR's paths for prefix, sorted; for an
// IPv6 prefix the global ones only (FRR lists each path's link-local next
// hop beside it).
func nextHops(t testing.TB, r *frr.Router, prefix string) []string {
	var out []string
	for _, p := range r.BGPRoute(t, prefix) {
		for _, h := range p.NextHops {
			if h.Scope != "link-local" {
				out = append(out, h.IP)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ipsOf are the nodes' addresses of family ("ipv4" or "ipv6"), sorted.
func ipsOf(family string, nodes ...*lab.Node) []string {
	var out []string
	for _, n := range nodes {
		if family == "ipv6" {
			out = append(out, n.IPv6.String())
		} else {
			out = append(out, n.IPv4.String())
		}
	}
	slices.Sort(out)
	return out
}

// TestBGPAgainstFRR: the real speakers on the lab's nodes peer with FRR's
// bgpd (in the client's namespace, on the same segment); FRR holds each
// advertised prefix with one path per eligible node, that node's address
// as next hop, with the advertisement's communities; a Local Service only
// from the node with its endpoint, following it; all withdrawn when the
// Services go.
func TestBGPAgainstFRR(t *testing.T) {
	frr.Require(t, "bgpd", "zebra")
	c := prepareCluster(t)
	l := c.lab
	r := frr.Start(t, l.Client.NS, map[string]string{"zebra": "", "bgpd": routerConfig(l, "ipv4")})
	c.startAll()

	peer := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "frr", Namespace: l.Namespace()},
		Spec: v1beta2.BGPPeerSpec{MyASN: nodeAS, ASN: routerAS, Address: lab.ClientIPv4.String()}}
	c.create(peer)
	c.create(&v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"203.0.113.0/28"}}})
	c.create(&v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()},
		Spec: v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{"bgp"}, Communities: []string{"65000:100"}}})

	all := ipsOf("ipv4", l.Nodes...)
	c.waitFor("every node's session to be up at FRR", func() bool {
		sum := r.BGPSummary(t)["ipv4Unicast"]
		for _, ip := range all {
			if sum[ip].State != "Established" {
				return false
			}
		}
		return true
	})

	cluster := c.service("web", []string{"203.0.113.1"}, []*lab.Node{l.Nodes[0]})
	local := c.service("local", []string{"203.0.113.2"}, []*lab.Node{l.Nodes[1]}, localPolicy)
	c.waitFor("203.0.113.1/32 from every node", func() bool { return cmp.Equal(nextHops(t, r, "203.0.113.1/32"), all) })
	c.waitFor("203.0.113.2/32 from node-2 alone", func() bool {
		return cmp.Equal(nextHops(t, r, "203.0.113.2/32"), ipsOf("ipv4", l.Nodes[1]))
	})
	for _, p := range r.BGPRoute(t, "203.0.113.1/32") {
		if p.Community == nil || !cmp.Equal(p.Community.List, []string{"65000:100"}) {
			t.Errorf("path from %s: communities %+v, want 65000:100", p.Peer.PeerID, p.Community)
		}
	}
	c.waitFor("a ServiceBGPStatus per node for web, naming the peer", func() bool {
		var list v1beta1.ServiceBGPStatusList
		if err := kube().List(t.Context(), &list, client.InNamespace(l.Namespace()),
			client.MatchingLabels{v1beta1.LabelServiceName: cluster.Name}); err != nil {
			return false
		}
		var nodes []string
		for _, st := range list.Items {
			if !cmp.Equal(st.Status.Peers, []string{"frr"}) {
				return false
			}
			nodes = append(nodes, st.Status.Node)
		}
		slices.Sort(nodes)
		return cmp.Equal(nodes, []string{"node-1", "node-2", "node-3"})
	})

	c.moveEndpoints(local, l.Nodes[2])
	c.waitFor("203.0.113.2/32 to follow its endpoint to node-3", func() bool {
		return cmp.Equal(nextHops(t, r, "203.0.113.2/32"), ipsOf("ipv4", l.Nodes[2]))
	})

	if err := kube().Delete(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: cluster.Namespace}}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("203.0.113.1/32 withdrawn by every node once its Service is deleted", func() bool {
		return len(r.BGPRoute(t, "203.0.113.1/32")) == 0
	})
	if got := nextHops(t, r, "203.0.113.2/32"); !cmp.Equal(got, ipsOf("ipv4", l.Nodes[2])) {
		t.Errorf("203.0.113.2/32 after another Service's deletion: next hops %v, want node-3's", got)
	}

	if err := kube().Delete(t.Context(), &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()}}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every route withdrawn once no advertisement selects them", func() bool {
		return len(r.BGPRoutes(t, "ipv4")) == 0
	})
}

// bgpCluster starts FRR's bgpd, zebra and bfdd in the client's namespace
// with a neighbor per lab node, a BGPPeer for FRR changed by opts (with
// BFD at the default timers on both sides when withBFD), and the speakers, and announces one Service with
// an endpoint on every node. It returns when FRR has the Service's prefix
// from every node.
func bgpCluster(t testing.TB, withBFD bool, opts func(*v1beta2.BGPPeerSpec)) (*cluster, *frr.Router, string) {
	t.Helper()
	frr.Require(t, "bgpd", "zebra", "bfdd")
	c := prepareCluster(t)
	l := c.lab
	cfg := routerConfig(l, "ipv4")
	if withBFD {
		for _, n := range l.Nodes {
			cfg += fmt.Sprintf(" neighbor %s bfd\n", n.IPv4)
		}
	}
	r := frr.Start(t, l.Client.NS, map[string]string{"zebra": "", "bfdd": "", "bgpd": cfg})
	spec := v1beta2.BGPPeerSpec{MyASN: nodeAS, ASN: routerAS, Address: lab.ClientIPv4.String()}
	if withBFD {
		c.create(&v1beta1.BFDProfile{ObjectMeta: metav1.ObjectMeta{Name: "default-timers", Namespace: l.Namespace()}})
		spec.BFDProfile = "default-timers"
	}
	opts(&spec)
	c.create(&v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "frr", Namespace: l.Namespace()}, Spec: spec})
	c.create(&v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"203.0.113.16/28"}}})
	c.create(&v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()},
		Spec: v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{"bgp"}}})
	c.startAll()
	c.service("web", []string{"203.0.113.17"}, l.Nodes)
	const prefix = "203.0.113.17/32"
	c.waitFor(prefix+" from every node", func() bool { return cmp.Equal(nextHops(t, r, prefix), ipsOf("ipv4", l.Nodes...)) })
	return c, r, prefix
}

// TestBGPGracefulRestartWithSpeakers: with enableGracefulRestart, a
// speaker killed with SIGKILL leaves its path at FRR, stale, and once
// restarted refreshes it; the path is never withdrawn meanwhile.
func TestBGPGracefulRestartWithSpeakers(t *testing.T) {
	c, r, prefix := bgpCluster(t, false, func(s *v1beta2.BGPPeerSpec) { s.EnableGracefulRestart = true })
	victim := c.lab.Nodes[0]
	pathFrom := func() (frr.BGPPath, bool) {
		for _, p := range r.BGPRoute(t, prefix) {
			for _, h := range p.NextHops {
				if h.IP == victim.IPv4.String() {
					return p, true
				}
			}
		}
		return frr.BGPPath{}, false
	}
	c.speakers[victim.Name].Kill()
	c.waitFor("FRR to hold "+victim.Name+"'s path as stale", func() bool {
		p, ok := pathFrom()
		if !ok {
			t.Fatalf("%s's path was withdrawn: graceful restart did not keep it", victim.Name)
		}
		return p.Stale
	})
	c.start(victim)
	c.waitFor(victim.Name+"'s path to be refreshed", func() bool {
		p, ok := pathFrom()
		if !ok {
			t.Fatalf("%s's path was withdrawn during the restart", victim.Name)
		}
		return !p.Stale
	})
	if got := nextHops(t, r, prefix); !cmp.Equal(got, ipsOf("ipv4", c.lab.Nodes...)) {
		t.Errorf("next hops of %s after the restart: %v, want every node", prefix, got)
	}
}

// TestBGPLinkCutWithBFD: with a BFDProfile on the BGPPeer, cutting one
// node's link makes FRR drop that node's path once BFD (300 ms x 3)
// declares it down, long before the 90 s hold timer could, and the path
// comes back with the link.
func TestBGPLinkCutWithBFD(t *testing.T) {
	c, r, prefix := bgpCluster(t, true, func(*v1beta2.BGPPeerSpec) {})
	all := ipsOf("ipv4", c.lab.Nodes...)
	c.waitFor("bfdd's session with every node up", func() bool {
		up := 0
		for _, p := range r.BFDPeers(t) {
			if p.Status == "up" && slices.Contains(all, p.Peer) {
				up++
			}
		}
		return up == len(all)
	})
	cut := c.lab.Nodes[1]
	if err := cut.CutLink(lab.SegmentA); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cut.RestoreLink(lab.SegmentA) })
	others := ipsOf("ipv4", c.lab.Nodes[0], c.lab.Nodes[2])
	// waitFor gives up after a minute, well before the hold timer (90 s).
	c.waitFor(cut.Name+"'s path to go with BFD", func() bool { return cmp.Equal(nextHops(t, r, prefix), others) })
	if p := r.BFDPeers(t)[cut.IPv4.String()]; p.Status == "up" {
		t.Errorf("bfdd's session with %s is up after the cut", cut.Name)
	}
	if err := cut.RestoreLink(lab.SegmentA); err != nil {
		t.Fatal(err)
	}
	c.waitFor(cut.Name+"'s path to come back with the link", func() bool { return cmp.Equal(nextHops(t, r, prefix), all) })
}

// TestBGPLeaveWithdrawsRestartKeeps: with enableGracefulRestart, a
// speaker stopped with SIGTERM on a node that stays (a restart) closes
// its session so that FRR keeps its path, stale, until it is back; on a
// cordoned node (drained, leaving for good) it closes with Cease and FRR
// withdraws the path at once.
func TestBGPLeaveWithdrawsRestartKeeps(t *testing.T) {
	c, r, prefix := bgpCluster(t, false, func(s *v1beta2.BGPPeerSpec) { s.EnableGracefulRestart = true })
	victim := c.lab.Nodes[0]
	path := func() (frr.BGPPath, bool) {
		for _, p := range r.BGPRoute(t, prefix) {
			for _, h := range p.NextHops {
				if h.IP == victim.IPv4.String() {
					return p, true
				}
			}
		}
		return frr.BGPPath{}, false
	}
	stop := func() {
		t.Helper()
		s := c.speakers[victim.Name]
		if err := s.Term(); err != nil {
			t.Fatal(err)
		}
		c.waitFor(victim.Name+"'s speaker to exit", func() bool { return !s.Running() })
	}

	t.Run("a restart keeps the path, stale", func(t *testing.T) {
		stop()
		c.waitFor("FRR to hold the path as stale", func() bool {
			p, ok := path()
			if !ok {
				t.Fatalf("%s's path was withdrawn on a restart", victim.Name)
			}
			return p.Stale
		})
		c.start(victim)
		c.waitFor("the path refreshed", func() bool { p, ok := path(); return ok && !p.Stale })
	})

	t.Run("a cordoned node withdraws the path", func(t *testing.T) {
		node := &corev1.Node{}
		if err := kube().Get(t.Context(), client.ObjectKey{Name: victim.Name}, node); err != nil {
			t.Fatal(err)
		}
		node.Spec.Unschedulable = true
		if err := kube().Update(t.Context(), node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := kube().Get(context.Background(), client.ObjectKey{Name: victim.Name}, node); err == nil {
				node.Spec.Unschedulable = false
				_ = kube().Update(context.Background(), node)
			}
		})
		stop()
		// FRR's restart time is 120 s: a path gone within waitFor's
		// minute was withdrawn, not timed out.
		c.waitFor("FRR to drop the path", func() bool {
			p, ok := path()
			if ok && p.Stale {
				t.Fatalf("%s's path kept stale although its node left", victim.Name)
			}
			return !ok
		})
	})
}

// TestBGPStatusFollowsFRRShutdown: a ServiceBGPStatus lists only the
// peers whose session is established: FRR shutting its neighbor (one
// node) makes that node's object go, the others' stay, and it comes back
// with the session.
func TestBGPStatusFollowsFRRShutdown(t *testing.T) {
	c, r, _ := bgpCluster(t, false, func(*v1beta2.BGPPeerSpec) {})
	l := c.lab
	svc := "web"
	nodesListing := func() []string {
		var list v1beta1.ServiceBGPStatusList
		if err := kube().List(t.Context(), &list, client.InNamespace(l.Namespace()),
			client.MatchingLabels{v1beta1.LabelServiceName: svc}); err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, st := range list.Items {
			if slices.Equal(st.Status.Peers, []string{"frr"}) {
				nodes = append(nodes, st.Status.Node)
			}
		}
		slices.Sort(nodes)
		return nodes
	}
	all := []string{"node-1", "node-2", "node-3"}
	c.waitFor("every node's object listing frr", func() bool { return slices.Equal(nodesListing(), all) })

	shut := l.Nodes[1]
	r.VTY(t, "bgpd", "configure terminal", "router bgp 64512", "neighbor "+shut.IPv4.String()+" shutdown")
	start := time.Now()
	c.waitFor(shut.Name+"'s object gone", func() bool { return slices.Equal(nodesListing(), []string{"node-1", "node-3"}) })
	t.Logf("%s's ServiceBGPStatus stopped listing frr %v after the shutdown", shut.Name, time.Since(start).Round(time.Millisecond))

	r.VTY(t, "bgpd", "configure terminal", "router bgp 64512", "no neighbor "+shut.IPv4.String()+" shutdown")
	c.waitFor(shut.Name+"'s session back at FRR", func() bool {
		return r.BGPSummary(t)["ipv4Unicast"][shut.IPv4.String()].State == "Established"
	})
	start = time.Now()
	c.waitFor(shut.Name+"'s object back", func() bool { return slices.Equal(nodesListing(), all) })
	t.Logf("%s's ServiceBGPStatus listed frr again %v after FRR saw the session established", shut.Name, time.Since(start).Round(time.Millisecond))
}
