package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
)

func TestBGPAdvertisementRules(t *testing.T) {
	withServices := bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) {
		s.ServiceSelectors = []metav1.LabelSelector{sel("app", "web")}
	})
	runRules(t, []ruleCase{
		{name: "empty spec", snap: snap(pool("p"), bgpAdv("a"))},
		{
			name: "aggregation lengths out of range",
			snap: snap(pool("p"), bgpAdv("a", aggLen(0), aggLenV6(129)), bgpAdv("b", aggLen(33))),
			want: []string{
				`BGPAdvertisement "a": spec.aggregationLength: 0 is out of range 1-32`,
				`BGPAdvertisement "a": spec.aggregationLengthV6: 129 is out of range 1-128`,
				`BGPAdvertisement "b": spec.aggregationLength: 33 is out of range 1-32`,
			},
		},
		{
			name: "serviceSelectors with aggregation",
			snap: snap(pool("p", addresses("0.0.0.0/0", "::/0")), bgpAdv("a", withServices, aggLen(24), aggLenV6(64))),
			want: []string{
				`BGPAdvertisement "a": spec.aggregationLength: cannot be combined with serviceSelectors`,
				`BGPAdvertisement "a": spec.aggregationLengthV6: cannot be combined with serviceSelectors`,
			},
		},
		{
			name: "serviceSelectors with the default lengths spelled out",
			snap: snap(pool("p"), bgpAdv("a", withServices, aggLen(32), aggLenV6(128))),
		},
		{
			name: "duplicate pools and peers",
			snap: snap(pool("p"), peer("x"), bgpAdv("a", advPools("p", "p"), advPeers("x", "x"))),
			want: []string{
				`BGPAdvertisement "a": spec.ipAddressPools[1]: duplicate of spec.ipAddressPools[0]`,
				`BGPAdvertisement "a": spec.peers[1]: duplicate of spec.peers[0]`,
			},
		},
		{
			name: "unknown peer",
			snap: snap(pool("p"), peer("x"), bgpAdv("a", advPeers("x", "y"))),
			want: []string{`BGPAdvertisement "a": spec.peers[1]: BGPPeer "y" does not exist`},
		},
		{
			name: "a listed peer that is invalid is the peer's problem",
			snap: snap(pool("p"), peer("x", peerAddress("nope")), bgpAdv("a", advPeers("x"))),
			want: []string{`BGPPeer "x": spec.peerAddress: "nope" is not an IP address`},
		},
		{
			name: "aggregation shorter than a CIDR",
			snap: snap(pool("p", addresses("192.0.2.0/24", "2001:db8::/64")), bgpAdv("a", aggLen(23), aggLenV6(48))),
			want: []string{
				`BGPAdvertisement "a": spec.aggregationLength: /23 is wider than /24, the largest CIDR block of "192.0.2.0/24" in IPAddressPool "p"`,
				`BGPAdvertisement "a": spec.aggregationLengthV6: /48 is wider than /64, the largest CIDR block of "2001:db8::/64" in IPAddressPool "p"`,
			},
		},
		{
			name: "aggregation equal to the CIDR",
			snap: snap(pool("p", addresses("192.0.2.0/24", "2001:db8::/64")), bgpAdv("a", aggLen(24), aggLenV6(64))),
		},
		{
			name: "aggregation shorter than a range's largest block",
			snap: snap(pool("p", addresses("192.0.2.10-192.0.2.100")), bgpAdv("a", aggLen(26))),
			want: []string{`BGPAdvertisement "a": spec.aggregationLength: /26 is wider than /27, the largest CIDR block of "192.0.2.10-192.0.2.100" in IPAddressPool "p"`},
		},
		{
			name: "aggregation to a range's largest block, as MetalLB allows",
			snap: snap(pool("p", addresses("192.0.2.10-192.0.2.100")), bgpAdv("a", aggLen(27))),
		},
		{
			name: "aggregation only checked against covered pools",
			snap: snap(pool("wide", addresses("10.0.0.0/8")), pool("narrow", addresses("192.0.2.0/24")), bgpAdv("a", advPools("narrow"), aggLen(24))),
		},
		{
			name: "localPref for a listed eBGP peer",
			snap: snap(pool("p"), peer("ext"), peer("int", ibgp(), peerAddress("198.51.100.2")), bgpAdv("a", localPref(100), advPeers("ext", "int"))),
			want: []string{`BGPAdvertisement "a": spec.localPref: BGPPeer "ext" is an eBGP peer; localPref is sent to iBGP peers only`},
		},
		{
			name: "localPref for every peer goes to the iBGP ones",
			snap: snap(pool("p"), peer("ext"), peer("int", ibgp(), peerAddress("198.51.100.2")), bgpAdv("a", localPref(100))),
		},
		{
			name: "IPv6 pool to a peer with BFD echo",
			snap: snap(
				pool("v6", addresses("2001:db8::/64")), pool("v4", addresses("192.0.2.0/24")),
				bfd("echo", echo()), peer("x", bfdProfileRef("echo")), peer("y", peerAddress("198.51.100.2")),
				bgpAdv("a"), bgpAdv("b", advPools("v4")), bgpAdv("c", advPools("v6"), advPeers("y")),
			),
			want: []string{`BGPAdvertisement "a": spec.peers: announces IPv6 addresses of IPAddressPool "v6" to BGPPeer "x", whose BFDProfile "echo" has echo mode on, which BFD does not support over IPv6`},
		},
	})
}

func TestBGPAdvertisementLocalPrefConflicts(t *testing.T) {
	dual := pool("p", addresses("192.0.2.0/24", "2001:db8::/64"))
	v4 := pool("p", addresses("192.0.2.0/24"))
	older := created[v1beta1.BGPAdvertisement](1)
	newer := created[v1beta1.BGPAdvertisement](2)
	conflict := func(pref, otherPref string) []string {
		return []string{`BGPAdvertisement "new": spec.localPref: ` + pref + ` conflicts with ` + otherPref + ` of BGPAdvertisement "old": both announce the addresses of IPAddressPool "p", with the same aggregation length, to the same peers from nodes both may select`}
	}
	runRules(t, []ruleCase{
		{
			name: "same pool, every peer, every node: the newer is at fault",
			snap: snap(v4, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(200))),
			want: conflict("localPref 200", "localPref 100"),
		},
		{
			name: "no localPref differs from one",
			snap: snap(v4, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer)),
			want: conflict("no localPref", "localPref 100"),
		},
		{
			name: "same localPref",
			snap: snap(v4, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(100))),
		},
		{
			name: "different aggregation: different prefixes",
			snap: snap(v4, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(200), aggLen(24))),
		},
		{
			name: "a dual-stack pool needs both lengths to differ",
			snap: snap(dual, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(200), aggLen(24))),
			want: conflict("localPref 200", "localPref 100"),
		},
		{
			name: "a dual-stack pool with both lengths different",
			snap: snap(dual, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(200), aggLen(24), aggLenV6(64))),
		},
		{
			name: "different pools",
			snap: snap(v4, pool("q", addresses("198.51.100.0/24")),
				bgpAdv("old", older, localPref(100), advPools("p")), bgpAdv("new", newer, localPref(200), advPools("q"))),
		},
		{
			name: "different peers",
			snap: snap(v4, peer("x", ibgp()), peer("y", ibgp(), peerAddress("198.51.100.2")),
				bgpAdv("old", older, localPref(100), advPeers("x")), bgpAdv("new", newer, localPref(200), advPeers("y"))),
		},
		{
			name: "a listed peer overlaps every peer",
			snap: snap(v4, peer("x", ibgp()), bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(200), advPeers("x"))),
			want: conflict("localPref 200", "localPref 100"),
		},
		{
			name: "disjoint nodes",
			snap: snap(v4, bgpAdv("old", older, localPref(100), advNodes(sel("rack", "1"))),
				bgpAdv("new", newer, localPref(200), advNodes(sel("rack", "2")))),
		},
		{
			name: "nodes that may overlap",
			snap: snap(v4, bgpAdv("old", older, localPref(100), advNodes(sel("rack", "1"))),
				bgpAdv("new", newer, localPref(200), advNodes(sel("zone", "a")))),
			want: conflict("localPref 200", "localPref 100"),
		},
		{
			name: "service selectors are not compared",
			snap: snap(v4, bgpAdv("old", older, localPref(100)), bgpAdv("new", newer, localPref(200),
				bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.ServiceSelectors = []metav1.LabelSelector{sel("app", "web")} }))),
		},
		{
			name: "an invalid older advertisement does not block a newer one",
			snap: snap(v4, bgpAdv("old", older, localPref(100), communities("nope")), bgpAdv("new", newer, localPref(200))),
			want: []string{`BGPAdvertisement "old": spec.communities[0]: no Community object defines the alias "nope"`},
		},
	})
}

func TestBGPAdvertisementModel(t *testing.T) {
	cfg := mustBuild(t, snap(
		pool("p"), pool("q", addresses("198.51.100.0/24")),
		peer("x", ibgp()), peer("y", ibgp(), peerAddress("198.51.100.2")),
		bgpAdv("default"),
		bgpAdv("tuned", advPools("q"), advPeers("y", "x"), localPref(50), aggLen(28), aggLenV6(120), advNodes(sel("rack", "1"))),
	))
	def, tuned := cfg.BGPAdvertisements()[0], cfg.BGPAdvertisements()[1]
	type view struct {
		Name              string
		Agg, AggV6        int
		Pref              uint32
		HasPref           bool
		Pools, Peers      []string
		SelectsX, Rack1   bool
		Std               []uint32
		Large             []LargeCommunity
		Services, AnyNode bool
	}
	see := func(a *BGPAdvertisement) view {
		pref, ok := a.LocalPref()
		return view{a.Name(), a.AggregationLength(), a.AggregationLengthV6(), pref, ok, a.Pools(), a.Peers(),
			a.SelectsPeer("x"), a.SelectsNode(labels.Set{"rack": "1"}), a.Communities(), a.LargeCommunities(),
			a.SelectsService(labels.Set{"app": "x"}), a.SelectsNode(labels.Set{"rack": "2"})}
	}
	want := []view{
		{Name: "default", Agg: 32, AggV6: 128, Pools: []string{"p", "q"}, SelectsX: true, Rack1: true, Services: true, AnyNode: true},
		{Name: "tuned", Agg: 28, AggV6: 120, Pref: 50, HasPref: true, Pools: []string{"q"}, Peers: []string{"x", "y"},
			SelectsX: true, Rack1: true, Services: true},
	}
	if diff := cmp.Diff(want, []view{see(def), see(tuned)}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var forQ []string
	for _, a := range cfg.BGPAdvertisementsFor("q") {
		forQ = append(forQ, a.Name())
	}
	if diff := cmp.Diff([]string{"default", "tuned"}, forQ); diff != "" {
		t.Errorf("BGPAdvertisementsFor(q) (-want +got):\n%s", diff)
	}
	if len(tuned.NodeSelectors()) != 1 || len(tuned.ServiceSelectors()) != 0 {
		t.Errorf("selectors: %v, %v", tuned.NodeSelectors(), tuned.ServiceSelectors())
	}
}
