package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
)

func TestL2AdvertisementRules(t *testing.T) {
	badSelector := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}
	runRules(t, []ruleCase{
		{name: "empty spec", snap: snap(pool("p"), l2("a"))},
		{
			name: "duplicate pool name",
			snap: snap(pool("p"), l2("a", l2Spec(func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"p", "q", "p"} }))),
			want: []string{`L2Advertisement "a": spec.ipAddressPools[2]: duplicate of spec.ipAddressPools[0]`},
		},
		{
			name: "bad selectors",
			snap: snap(pool("p"), l2("a", l2Spec(func(s *v1beta1.L2AdvertisementSpec) {
				s.IPAddressPoolSelectors = []metav1.LabelSelector{badSelector}
				s.NodeSelectors = []metav1.LabelSelector{sel("rack", "1"), sel("rack", "1")}
				s.ServiceSelectors = []metav1.LabelSelector{badSelector}
			}))),
			want: []string{
				`L2Advertisement "a": spec.ipAddressPoolSelectors[0]: invalid label selector: "Near" is not a valid label selector operator`,
				`L2Advertisement "a": spec.nodeSelectors[1]: duplicate of spec.nodeSelectors[0]`,
				`L2Advertisement "a": spec.serviceSelectors[0]: invalid label selector: "Near" is not a valid label selector operator`,
			},
		},
		{
			name: "preferred node selectors",
			snap: snap(pool("p"), l2("a", l2Spec(func(s *v1beta1.L2AdvertisementSpec) {
				s.PreferredNodeSelectors = []v1beta1.PreferredNodeSelector{
					{Weight: 0, Preference: sel("a", "b")},
					{Weight: 101, Preference: badSelector},
					{Weight: 100, Preference: sel("a", "b")},
				}
			}))),
			want: []string{
				`L2Advertisement "a": spec.preferredNodeSelectors[0].weight: 0 is out of range 1-100`,
				`L2Advertisement "a": spec.preferredNodeSelectors[1].weight: 101 is out of range 1-100`,
				`L2Advertisement "a": spec.preferredNodeSelectors[1].preference: invalid label selector: "Near" is not a valid label selector operator`,
			},
		},
		{
			name: "empty interface name",
			snap: snap(pool("p"), l2("a", l2Spec(func(s *v1beta1.L2AdvertisementSpec) { s.Interfaces = []string{"eth0", ""} }))),
			want: []string{`L2Advertisement "a": spec.interfaces[1]: must not be empty`},
		},
	})
}

func TestL2AdvertisementPools(t *testing.T) {
	objs := []any{
		pool("gold", addresses("192.0.2.0/26"), labelled[v1beta1.IPAddressPool]("tier", "gold")),
		pool("silver", addresses("192.0.2.64/26"), labelled[v1beta1.IPAddressPool]("tier", "silver")),
		pool("bronze", addresses("192.0.2.128/26")),
		pool("broken", addresses("nope")),
	}
	cases := []struct {
		name string
		spec func(*v1beta1.L2AdvertisementSpec)
		want []string
	}{
		{"neither names nor selectors: every valid pool", func(*v1beta1.L2AdvertisementSpec) {}, []string{"bronze", "gold", "silver"}},
		{"names, missing ones ignored", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"silver", "ghost", "broken"} }, []string{"silver"}},
		{"selectors", func(s *v1beta1.L2AdvertisementSpec) {
			s.IPAddressPoolSelectors = []metav1.LabelSelector{sel("tier", "gold"), sel("tier", "silver")}
		}, []string{"gold", "silver"}},
		{"names and selectors", func(s *v1beta1.L2AdvertisementSpec) {
			s.IPAddressPools = []string{"bronze", "gold"}
			s.IPAddressPoolSelectors = []metav1.LabelSelector{sel("tier", "gold")}
		}, []string{"bronze", "gold"}},
		{"names that match nothing", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"ghost"} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := Build(snap(append(objs, l2("a", l2Spec(tc.spec)))...))
			a := cfg.L2Advertisements()[0]
			if diff := cmp.Diff(tc.want, a.Pools()); diff != "" {
				t.Errorf("Pools (-want +got):\n%s", diff)
			}
			for _, p := range []string{"gold", "silver", "bronze"} {
				covered := len(cfg.L2AdvertisementsFor(p)) == 1
				if a.Covers(p) != covered {
					t.Errorf("Covers(%s) = %v but L2AdvertisementsFor gives %v", p, a.Covers(p), covered)
				}
			}
		})
	}
}

func TestL2AdvertisementModel(t *testing.T) {
	cfg := mustBuild(t, snap(pool("p"), l2("a", l2Spec(func(s *v1beta1.L2AdvertisementSpec) {
		s.Interfaces = []string{"eth0", "eth1"}
		s.NodeSelectors = []metav1.LabelSelector{sel("role", "edge")}
		s.ServiceSelectors = []metav1.LabelSelector{sel("app", "web")}
		s.PreferredNodeSelectors = []v1beta1.PreferredNodeSelector{
			{Weight: 50, Preference: sel("zone", "a")},
			{Weight: 20, Preference: sel("fast", "yes")},
		}
	}))))
	a := cfg.L2Advertisements()[0]
	if diff := cmp.Diff([]string{"eth0", "eth1"}, a.Interfaces()); diff != "" {
		t.Errorf("Interfaces (-want +got):\n%s", diff)
	}
	checks := []struct {
		what      string
		got, want bool
	}{
		{"SelectsNode(edge)", a.SelectsNode(labels.Set{"role": "edge"}), true},
		{"SelectsNode(core)", a.SelectsNode(labels.Set{"role": "core"}), false},
		{"SelectsService(web)", a.SelectsService(labels.Set{"app": "web"}), true},
		{"SelectsService(db)", a.SelectsService(labels.Set{"app": "db"}), false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for node, want := range map[string]int{"": 0, "zone=a": 50, "zone=a,fast=yes": 70, "fast=yes": 20} {
		set, _ := labels.ConvertSelectorToLabelsMap(node)
		if got := a.NodeWeight(set); got != want {
			t.Errorf("NodeWeight(%s) = %d, want %d", node, got, want)
		}
	}
	if got := len(a.PreferredNodeSelectors()); got != 2 {
		t.Errorf("PreferredNodeSelectors: %d, want 2", got)
	}
	if len(a.NodeSelectors()) != 1 || len(a.ServiceSelectors()) != 1 {
		t.Errorf("selectors: %v, %v", a.NodeSelectors(), a.ServiceSelectors())
	}
}
