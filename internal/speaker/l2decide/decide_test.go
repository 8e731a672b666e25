package l2decide

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/election"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/facts/factstest"
)

var testAddr = netip.MustParseAddr("198.51.100.10")

func buildConfig(t *testing.T, ads ...v1beta1.L2Advertisement) *config.Config {
	t.Helper()
	pools := []v1beta1.IPAddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "lan"},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.0/24"}}}}
	cfg, err := config.Build(config.Snapshot{Pools: pools, L2Advertisements: ads})
	if err != nil {
		t.Fatalf("build config: %v", err)
	}
	return cfg
}

// ad is an L2Advertisement of every pool, changed by opts.
func ad(name string, opts ...func(*v1beta1.L2AdvertisementSpec)) v1beta1.L2Advertisement {
	a := v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(&a.Spec)
	}
	return a
}

func nodesLabelled(key, value string) func(*v1beta1.L2AdvertisementSpec) {
	return func(s *v1beta1.L2AdvertisementSpec) {
		s.NodeSelectors = append(s.NodeSelectors, metav1.LabelSelector{MatchLabels: map[string]string{key: value}})
	}
}

func servicesLabelled(key, value string) func(*v1beta1.L2AdvertisementSpec) {
	return func(s *v1beta1.L2AdvertisementSpec) {
		s.ServiceSelectors = append(s.ServiceSelectors, metav1.LabelSelector{MatchLabels: map[string]string{key: value}})
	}
}

func prefer(weight int32, key, value string) func(*v1beta1.L2AdvertisementSpec) {
	return func(s *v1beta1.L2AdvertisementSpec) {
		s.PreferredNodeSelectors = append(s.PreferredNodeSelectors, v1beta1.PreferredNodeSelector{Weight: weight,
			Preference: metav1.LabelSelector{MatchLabels: map[string]string{key: value}}})
	}
}

func onInterfaces(names ...string) func(*v1beta1.L2AdvertisementSpec) {
	return func(s *v1beta1.L2AdvertisementSpec) { s.Interfaces = names }
}

func local(f *facts.Service) *facts.Service { f.Local = true; return f }

func noEndpoints(f *facts.Service) *facts.Service { f.Endpoints = facts.Endpoints{}; return f }

func labelled(f *facts.Service, key, value string) *facts.Service {
	f.Labels = labels.Set{key: value}
	return f
}

func healthyNodes(names ...string) map[string]facts.Node {
	out := map[string]facts.Node{}
	for _, n := range names {
		out[n] = facts.Node{Name: n, Labels: labels.Set{"kubernetes.io/hostname": n}}
	}
	return out
}

// alphabetical stands in for the hash order: the candidate with the
// highest weight, then the smallest name.
func alphabetical(_ netip.Addr, c []election.Candidate) (string, bool) {
	if len(c) == 0 {
		return "", false
	}
	best := c[0]
	for _, x := range c[1:] {
		if x.Weight > best.Weight || (x.Weight == best.Weight && x.Node < best.Node) {
			best = x
		}
	}
	return best.Node, true
}

func TestDecide(t *testing.T) {
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	tests := []struct {
		name     string
		ads      []v1beta1.L2Advertisement
		outside  bool // the address is in no pool
		services []*facts.Service
		live     []string
		nodes    map[string]facts.Node
		change   func(map[string]facts.Node)
		want     Decision
	}{
		{
			name: "the election decides among all live nodes", ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{factstest.Service("web", "b")}, live: []string{"a", "b", "c"},
			want: Decision{Owner: "a", Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "a live node without a Node object is no candidate", ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{factstest.Service("web", "b")}, live: []string{"a", "b"},
			change: func(n map[string]facts.Node) { delete(n, "a") },
			want:   Decision{Owner: "b", Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "NetworkUnavailable and the exclude label remove nodes", ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a", "b", "c"},
			change: func(n map[string]facts.Node) {
				n["a"] = facts.Node{Name: "a", NetworkUnavailable: true}
				n["b"] = facts.Node{Name: "b", Excluded: true}
			},
			want: Decision{Owner: "c", Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "node selectors limit the candidates", ads: []v1beta1.L2Advertisement{ad("edge", nodesLabelled("kubernetes.io/hostname", "c"))},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a", "b", "c"},
			want: Decision{Owner: "c", Services: []types.NamespacedName{key("web")}},
		},
		{
			name:     "a node without labels matches only advertisements without node selectors",
			ads:      []v1beta1.L2Advertisement{ad("edge", nodesLabelled("zone", "x"))},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a"},
			change: func(n map[string]facts.Node) { n["a"] = facts.Node{Name: "a"} },
			want:   Decision{Reason: NoCandidate, Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "Local policy keeps the nodes with an endpoint", ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{local(factstest.Service("web", "c"))}, live: []string{"a", "b", "c"},
			want: Decision{Owner: "c", Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "Local policy with endpoints only on nodes without a speaker", ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{local(factstest.Service("web", "z"))}, live: []string{"a", "b"},
			want: Decision{Reason: NoCandidate, Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "a Service without a serving endpoint is not announced", ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{noEndpoints(factstest.Service("web"))}, live: []string{"a"},
			want: Decision{Reason: NoServingEndpoint},
		},
		{
			name: "an address in no pool", outside: true, ads: []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a"},
			want: Decision{Reason: NotInAnyPool},
		},
		{
			name: "no advertisement selects the Service", ads: []v1beta1.L2Advertisement{ad("gold", servicesLabelled("tier", "gold"))},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a"},
			want: Decision{Reason: NoAdvertisement},
		},
		{
			name: "preferred node selectors outweigh the order", ads: []v1beta1.L2Advertisement{ad("all", prefer(10, "kubernetes.io/hostname", "c"))},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a", "b", "c"},
			want: Decision{Owner: "c", Services: []types.NamespacedName{key("web")}},
		},
		{
			name: "weights of several advertisements add up",
			ads: []v1beta1.L2Advertisement{
				ad("one", prefer(10, "kubernetes.io/hostname", "b")),
				ad("two", prefer(5, "kubernetes.io/hostname", "c"), prefer(6, "kubernetes.io/hostname", "c")),
			},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a", "b", "c"},
			want: Decision{Owner: "c", Services: []types.NamespacedName{key("web")}},
		},
		{
			name:     "shared address: the intersection of the Services' candidates",
			ads:      []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{local(factstest.Service("dns-tcp", "a", "b")), local(factstest.Service("dns-udp", "b", "c"))},
			live:     []string{"a", "b", "c"},
			want:     Decision{Owner: "b", Services: []types.NamespacedName{key("dns-tcp"), key("dns-udp")}},
		},
		{
			name:     "shared address: a Service without endpoints does not narrow it",
			ads:      []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{local(factstest.Service("dns-tcp", "c")), noEndpoints(factstest.Service("dns-udp"))},
			live:     []string{"a", "b", "c"},
			want:     Decision{Owner: "c", Services: []types.NamespacedName{key("dns-tcp")}},
		},
		{
			name:     "shared address: disjoint candidates elect nobody",
			ads:      []v1beta1.L2Advertisement{ad("all")},
			services: []*facts.Service{local(factstest.Service("dns-tcp", "a")), local(factstest.Service("dns-udp", "b"))},
			live:     []string{"a", "b"},
			want:     Decision{Reason: NoCandidate, Services: []types.NamespacedName{key("dns-tcp"), key("dns-udp")}},
		},
		{
			name: "interfaces: the union of the owner's advertisements",
			ads: []v1beta1.L2Advertisement{
				ad("one", onInterfaces("eth1")), ad("two", onInterfaces("eth0", "eth1")),
				ad("elsewhere", onInterfaces("eth9"), nodesLabelled("kubernetes.io/hostname", "z")),
			},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a"},
			want: Decision{Owner: "a", Services: []types.NamespacedName{key("web")}, Interfaces: []string{"eth0", "eth1"}},
		},
		{
			name:     "interfaces: an advertisement without a list allows all",
			ads:      []v1beta1.L2Advertisement{ad("one", onInterfaces("eth1")), ad("two")},
			services: []*facts.Service{factstest.Service("web")}, live: []string{"a"},
			want: Decision{Owner: "a", Services: []types.NamespacedName{key("web")}},
		},
		{
			name:     "advertisements selecting Services by label",
			ads:      []v1beta1.L2Advertisement{ad("gold", servicesLabelled("tier", "gold"), onInterfaces("eth7"))},
			services: []*facts.Service{labelled(factstest.Service("web"), "tier", "gold"), factstest.Service("other")},
			live:     []string{"a"},
			want:     Decision{Owner: "a", Services: []types.NamespacedName{key("web")}, Interfaces: []string{"eth7"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := buildConfig(t, tt.ads...)
			nodes := tt.nodes
			if nodes == nil {
				nodes = healthyNodes(tt.live...)
			}
			if tt.change != nil {
				tt.change(nodes)
			}
			in := Input{Addr: testAddr, Services: tt.services, Live: tt.live, Nodes: nodes}
			if !tt.outside {
				in.Pool, _ = cfg.PoolFor(testAddr)
			}
			got := Decide(in, cfg, alphabetical)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
