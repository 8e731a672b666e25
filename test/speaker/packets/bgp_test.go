package packets

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
// neighbor per lab node, no policy, every path kept.
func routerConfig(l *lab.Lab) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp network import-check\n", routerAS, lab.ClientIPv4)
	b.WriteString(" bgp bestpath as-path multipath-relax\n")
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n", n.IPv4, nodeAS)
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 16\n exit-address-family\n")
	return b.String()
}

// nextHops are the next hops of FRR's paths for prefix, sorted.
func nextHops(t testing.TB, r *frr.Router, prefix string) []string {
	var out []string
	for _, p := range r.BGPRoute(t, prefix) {
		for _, h := range p.NextHops {
			out = append(out, h.IP)
		}
	}
	slices.Sort(out)
	return out
}

func ipsOf(nodes ...*lab.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.IPv4.String())
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
	r := frr.Start(t, l.Client.NS, map[string]string{"zebra": "", "bgpd": routerConfig(l)})
	c.startAll()

	peer := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "frr", Namespace: l.Namespace()},
		Spec: v1beta2.BGPPeerSpec{MyASN: nodeAS, ASN: routerAS, Address: lab.ClientIPv4.String()}}
	c.create(peer)
	c.create(&v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"203.0.113.0/28"}}})
	c.create(&v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()},
		Spec: v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{"bgp"}, Communities: []string{"65000:100"}}})

	all := ipsOf(l.Nodes...)
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
		return cmp.Equal(nextHops(t, r, "203.0.113.2/32"), ipsOf(l.Nodes[1]))
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
		return cmp.Equal(nextHops(t, r, "203.0.113.2/32"), ipsOf(l.Nodes[2]))
	})

	if err := kube().Delete(t.Context(), &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "bgp", Namespace: l.Namespace()}}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every route withdrawn once no advertisement selects them", func() bool {
		return len(r.BGPRoutes(t, "ipv4")) == 0
	})
}
