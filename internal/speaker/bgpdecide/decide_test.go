package bgpdecide

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/facts/factstest"
)

// bgpConfig builds a configuration with one pool, 198.51.100.0/24 and
// 2001:db8:1::/64, two iBGP peers "r1" (on every node) and "r2" (on nodes
// labelled rack=2), an eBGP peer "x", and the given advertisements.
func bgpConfig(t testing.TB, ads ...v1beta1.BGPAdvertisement) *config.Config {
	t.Helper()
	peer := func(name, addr string, asn uint32, nodes ...metav1.LabelSelector) v1beta2.BGPPeer {
		return v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1beta2.BGPPeerSpec{MyASN: 64500, ASN: asn, Address: addr, NodeSelectors: nodes}}
	}
	cfg, err := config.Build(config.Snapshot{
		Pools: []v1beta1.IPAddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "lan"},
			Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.0/24", "2001:db8:1::/64"}}}},
		Peers: []v1beta2.BGPPeer{
			peer("r1", "203.0.113.1", 64500),
			peer("r2", "203.0.113.2", 64500, metav1.LabelSelector{MatchLabels: map[string]string{"rack": "2"}}),
			peer("x", "203.0.113.3", 64999),
		},
		BGPAdvertisements: ads,
	})
	if err != nil {
		t.Fatalf("build config: %v", err)
	}
	return cfg
}

func bgpAdvertisement(name string, edit func(*v1beta1.BGPAdvertisementSpec)) v1beta1.BGPAdvertisement {
	a := v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if edit != nil {
		edit(&a.Spec)
	}
	return a
}

// route is one entry, flattened for comparison.
type route struct {
	Session, Prefix string
	LocalPref       uint32
	Communities     []string
}

func flatten(d Decision) []route {
	var out []route
	for _, e := range d.Entries {
		r := route{Session: e.Key.Session, Prefix: e.Key.Prefix.String(), LocalPref: e.Attrs.LocalPref}
		for _, c := range e.Attrs.Communities {
			r.Communities = append(r.Communities, config.FormatCommunity(c))
		}
		out = append(out, r)
	}
	return out
}

func TestDecide(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8:1::7")
	outside := netip.MustParseAddr("203.0.113.50")
	self := &facts.Node{Name: "a", Labels: labels.Set{"rack": "1"}}
	tests := []struct {
		name  string
		ads   []v1beta1.BGPAdvertisement
		svc   *facts.Service
		addrs []netip.Addr
		self  *facts.Node
		want  []route
		why   Why
	}{
		{name: "every address to every session of this node", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", nil)},
			svc: factstest.Service("web", "b"), addrs: []netip.Addr{v4, v6},
			want: []route{{Session: "r1", Prefix: "198.51.100.7/32"}, {Session: "x", Prefix: "198.51.100.7/32"},
				{Session: "r1", Prefix: "2001:db8:1::7/128"}, {Session: "x", Prefix: "2001:db8:1::7/128"}}},
		{name: "aggregation, communities, localPref on iBGP only", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("agg", func(s *v1beta1.BGPAdvertisementSpec) {
			s.AggregationLength, s.AggregationLengthV6 = ptrTo[int32](24), ptrTo[int32](64)
			s.LocalPref, s.Communities = 150, []string{"65000:7"}
		})}, svc: factstest.Service("web", "b"), addrs: []netip.Addr{v4, v6},
			want: []route{{"r1", "198.51.100.0/24", 150, []string{"65000:7"}}, {"x", "198.51.100.0/24", 0, []string{"65000:7"}},
				{"r1", "2001:db8:1::/64", 150, []string{"65000:7"}}, {"x", "2001:db8:1::/64", 0, []string{"65000:7"}}}},
		{name: "only the listed peers", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("listed", func(s *v1beta1.BGPAdvertisementSpec) { s.Peers = []string{"x"} })},
			svc: factstest.Service("web", "b"), addrs: []netip.Addr{v4}, want: []route{{Session: "x", Prefix: "198.51.100.7/32"}}},
		{name: "a peer that does not select this node gets nothing", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("r2", func(s *v1beta1.BGPAdvertisementSpec) { s.Peers = []string{"r2"} })},
			svc: factstest.Service("web", "b"), addrs: []netip.Addr{v4}, why: NoAdvertisement},
		{name: "an advertisement for other nodes", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("rack2", func(s *v1beta1.BGPAdvertisementSpec) {
			s.NodeSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"rack": "2"}}}
		})}, svc: factstest.Service("web", "b"), addrs: []netip.Addr{v4}, why: NoAdvertisement},
		{name: "an advertisement for other Services", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("gold", func(s *v1beta1.BGPAdvertisementSpec) {
			s.ServiceSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "gold"}}}
		})}, svc: factstest.Service("web", "b"), addrs: []netip.Addr{v4}, why: NoAdvertisement},
		{name: "an address in no pool", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", nil)},
			svc: factstest.Service("web", "b"), addrs: []netip.Addr{outside}, why: NoAdvertisement},
		{name: "Cluster policy: an endpoint on another node is enough", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", func(s *v1beta1.BGPAdvertisementSpec) { s.Peers = []string{"r1"} })},
			svc: factstest.Service("web", "z"), addrs: []netip.Addr{v4}, want: []route{{Session: "r1", Prefix: "198.51.100.7/32"}}},
		{name: "no serving endpoint anywhere", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", nil)},
			svc: noEndpoints(factstest.Service("web")), addrs: []netip.Addr{v4}, why: NoServingEndpoint},
		{name: "Local policy without an endpoint here", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", nil)},
			svc: local(factstest.Service("web", "b")), addrs: []netip.Addr{v4}, why: NoLocalEndpoint},
		{name: "Local policy with an endpoint here", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", func(s *v1beta1.BGPAdvertisementSpec) { s.Peers = []string{"r1"} })},
			svc: local(factstest.Service("web", "a")), addrs: []netip.Addr{v4}, want: []route{{Session: "r1", Prefix: "198.51.100.7/32"}}},
		{name: "an excluded node", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", nil)}, svc: factstest.Service("web", "a"), addrs: []netip.Addr{v4},
			self: &facts.Node{Name: "a", Excluded: true}, why: NodeExcluded},
		{name: "NetworkUnavailable", ads: []v1beta1.BGPAdvertisement{bgpAdvertisement("all", nil)}, svc: factstest.Service("web", "a"), addrs: []netip.Addr{v4},
			self: &facts.Node{Name: "a", NetworkUnavailable: true}, why: NodeExcluded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := bgpConfig(t, tt.ads...)
			me := self
			if tt.self != nil {
				me = tt.self
			}
			d := Decide(tt.svc, tt.addrs, cfg, NewModel(cfg, me), me)
			if diff := cmp.Diff(tt.want, flatten(d), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("routes (-want +got):\n%s", diff)
			}
			if d.Reason != tt.why {
				t.Errorf("reason %q, want %q", d.Reason, tt.why)
			}
		})
	}
}

func TestBGPModelSessions(t *testing.T) {
	cfg := bgpConfig(t)
	rack1 := NewModel(cfg, &facts.Node{Name: "a", Labels: labels.Set{"rack": "1"}})
	rack2 := NewModel(cfg, &facts.Node{Name: "b", Labels: labels.Set{"rack": "2"}})
	if diff := cmp.Diff([]string{"r1", "x"}, rack1.Names); diff != "" {
		t.Errorf("rack 1 sessions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r1", "r2", "x"}, rack2.Names); diff != "" {
		t.Errorf("rack 2 sessions (-want +got):\n%s", diff)
	}
	want := bgp.Session{Name: "r1", MyASN: 64500, PeerASN: 64500, Address: netip.MustParseAddr("203.0.113.1"), Port: 179,
		HoldTime: config.DefaultHoldTime, KeepaliveTime: config.DefaultHoldTime / 3}
	if diff := cmp.Diff(want, rack1.Sessions[0], cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("session r1 (-want +got):\n%s", diff)
	}
	if !SameSessions(rack1.Sessions, NewModel(cfg, &facts.Node{Name: "c", Labels: labels.Set{"rack": "1"}}).Sessions) {
		t.Error("two builds of one configuration give different sessions")
	}
	if got := NewModel(cfg, nil); len(got.Sessions) != 0 {
		t.Errorf("a node that is not known runs sessions: %v", got.Names)
	}
}

func ptrTo[T any](v T) *T { return &v }

func local(f *facts.Service) *facts.Service { f.Local = true; return f }

func noEndpoints(f *facts.Service) *facts.Service { f.Endpoints = facts.Endpoints{}; return f }
