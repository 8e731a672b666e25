package config

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
)

func TestPoolRules(t *testing.T) {
	badSelector := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
	runRules(t, []ruleCase{
		{
			name: "valid pools",
			snap: snap(pool("gold", addresses("192.0.2.0/25", "2001:db8::/64")), pool("silver", addresses("192.0.2.128-192.0.2.255"))),
		},
		{
			name: "no addresses",
			snap: snap(pool("gold", addresses())),
			want: []string{`IPAddressPool "gold": spec.addresses: must list at least one CIDR or range`},
		},
		{
			name: "bad entries are each reported",
			snap: snap(pool("gold", addresses("192.0.2.0/24", "192.0.3.20-192.0.3.10", "192.0.4.1"))),
			want: []string{
				`IPAddressPool "gold": spec.addresses[1]: invalid range "192.0.3.20-192.0.3.10": start is after end`,
				`IPAddressPool "gold": spec.addresses[2]: invalid CIDR "192.0.4.1": no prefix length (write "192.0.4.1/32" for a single address)`,
			},
		},
		{
			name: "entries of one pool overlap",
			snap: snap(pool("gold", addresses("192.0.2.0/24", "192.0.2.128-192.0.2.130"))),
			want: []string{`IPAddressPool "gold": spec.addresses[1]: "192.0.2.128-192.0.2.130" overlaps "192.0.2.0/24" (spec.addresses[0])`},
		},
		{
			name: "same CIDR twice in one pool, host bits aside",
			snap: snap(pool("gold", addresses("192.0.2.0/24", "192.0.2.9/24"))),
			want: []string{`IPAddressPool "gold": spec.addresses[1]: "192.0.2.9/24" overlaps "192.0.2.0/24" (spec.addresses[0])`},
		},
		{
			name: "pools overlap: the newer one is at fault",
			snap: snap(
				pool("aaa", addresses("192.0.2.128/25"), created[v1beta1.IPAddressPool](2)),
				pool("zzz", addresses("192.0.2.0/24"), created[v1beta1.IPAddressPool](1)),
			),
			want: []string{`IPAddressPool "aaa": spec.addresses[0]: "192.0.2.128/25" overlaps "192.0.2.0/24" of IPAddressPool "zzz"`},
		},
		{
			name: "pools of the same age overlap: the later name is at fault",
			snap: snap(pool("b", addresses("2001:db8::1-2001:db8::5")), pool("a", addresses("2001:db8::/120"))),
			want: []string{`IPAddressPool "b": spec.addresses[0]: "2001:db8::1-2001:db8::5" overlaps "2001:db8::/120" of IPAddressPool "a"`},
		},
		{
			name: "a pool overlapping two older pools gets two errors",
			snap: snap(
				pool("a", addresses("192.0.2.0/25"), created[v1beta1.IPAddressPool](1)),
				pool("b", addresses("192.0.2.128/25"), created[v1beta1.IPAddressPool](2)),
				pool("c", addresses("192.0.2.100-192.0.2.200"), created[v1beta1.IPAddressPool](3)),
			),
			want: []string{
				`IPAddressPool "c": spec.addresses[0]: "192.0.2.100-192.0.2.200" overlaps "192.0.2.0/25" of IPAddressPool "a"`,
				`IPAddressPool "c": spec.addresses[0]: "192.0.2.100-192.0.2.200" overlaps "192.0.2.128/25" of IPAddressPool "b"`,
			},
		},
		{
			name: "an invalid older pool still keeps its addresses",
			snap: snap(
				pool("old", addresses("192.0.2.0/24", "bogus"), created[v1beta1.IPAddressPool](1)),
				pool("new", addresses("192.0.2.0/26"), created[v1beta1.IPAddressPool](2)),
			),
			want: []string{
				`IPAddressPool "new": spec.addresses[0]: "192.0.2.0/26" overlaps "192.0.2.0/24" of IPAddressPool "old"`,
				`IPAddressPool "old": spec.addresses[1]: invalid CIDR "bogus": want a CIDR like "192.0.2.0/24" or a range like "192.0.2.10-192.0.2.20"`,
			},
		},
		{
			name: "IPv4 and IPv6 never overlap",
			snap: snap(pool("a", addresses("0.0.0.0/0")), pool("b", addresses("::/0"))),
		},
		{
			name: "duplicate namespace",
			snap: snap(pool("gold", allocation(namespaces("red", "blue", "red")))),
			want: []string{`IPAddressPool "gold": spec.serviceAllocation.namespaces[2]: duplicate of spec.serviceAllocation.namespaces[0]`},
		},
		{
			name: "bad and duplicate selectors",
			snap: snap(pool("gold", allocation(
				namespaceSelectors(badSelector),
				serviceSelectors(sel("app", "web"), sel("app", "web")),
			))),
			want: []string{
				`IPAddressPool "gold": spec.serviceAllocation.namespaceSelectors[0]: invalid label selector: "Near" is not a valid label selector operator`,
				`IPAddressPool "gold": spec.serviceAllocation.serviceSelectors[1]: duplicate of spec.serviceAllocation.serviceSelectors[0]`,
			},
		},
	})
}

func TestPoolDefaults(t *testing.T) {
	cfg := mustBuild(t, snap(
		pool("plain"),
		pool("tuned", addresses("198.51.100.0/24"), autoAssign(false), avoidBuggyIPs(), labelled[v1beta1.IPAddressPool]("tier", "gold")),
	))
	type view struct {
		AutoAssign, AvoidBuggyIPs, HasAllocation bool
		Labels                                   labels.Set
	}
	got := map[string]view{}
	for _, p := range cfg.Pools() {
		got[p.Name()] = view{p.AutoAssign(), p.AvoidBuggyIPs(), p.ServiceAllocation() != nil, p.Labels()}
	}
	want := map[string]view{
		"plain": {AutoAssign: true},
		"tuned": {AvoidBuggyIPs: true, Labels: labels.Set{"tier": "gold"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPoolRangesAndFamilies(t *testing.T) {
	cfg := mustBuild(t, snap(
		pool("dual", addresses("192.0.2.10-192.0.2.20", "2001:db8::/126")),
		pool("v4", addresses("198.51.100.0/24")),
		pool("v6", addresses("2001:db8:1::-2001:db8:1::ff")),
	))
	dual, _ := cfg.Pool("dual")
	var texts []string
	for _, r := range dual.Ranges() {
		texts = append(texts, r.String())
	}
	if diff := cmp.Diff([]string{"192.0.2.10-192.0.2.20", "2001:db8::/126"}, texts); diff != "" {
		t.Errorf("Ranges (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		pool        string
		hasV4, has6 bool
	}{{"dual", true, true}, {"v4", true, false}, {"v6", false, true}} {
		p, _ := cfg.Pool(tc.pool)
		if p.HasIPv4() != tc.hasV4 || p.HasIPv6() != tc.has6 {
			t.Errorf("%s: HasIPv4, HasIPv6 = %v, %v; want %v, %v", tc.pool, p.HasIPv4(), p.HasIPv6(), tc.hasV4, tc.has6)
		}
	}
	for addr, want := range map[string]bool{
		"192.0.2.9": false, "192.0.2.10": true, "192.0.2.20": true, "192.0.2.21": false,
		"2001:db8::3": true, "2001:db8::4": false, "::ffff:192.0.2.10": false,
	} {
		if got := dual.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestPoolAdmits(t *testing.T) {
	type svc struct {
		ns       string
		nsLabels labels.Set
		labels   labels.Set
	}
	plain := svc{ns: "default"}
	inRed := svc{ns: "red"}
	prodNs := svc{ns: "shop", nsLabels: labels.Set{"env": "prod"}}
	webInRed := svc{ns: "red", labels: labels.Set{"app": "web"}}
	webInProd := svc{ns: "shop", nsLabels: labels.Set{"env": "prod"}, labels: labels.Set{"app": "web"}}
	webElsewhere := svc{ns: "default", labels: labels.Set{"app": "web"}}

	cases := []struct {
		name  string
		pool  v1beta1.IPAddressPool
		admit []svc
		deny  []svc
	}{
		{
			name:  "no serviceAllocation admits all",
			pool:  pool("p"),
			admit: []svc{plain, inRed, prodNs, webInRed},
		},
		{
			name:  "priority only admits all",
			pool:  pool("p", allocation(priority(5))),
			admit: []svc{plain, inRed, prodNs, webInRed},
		},
		{
			name:  "namespaces",
			pool:  pool("p", allocation(namespaces("red"))),
			admit: []svc{inRed, webInRed},
			deny:  []svc{plain, prodNs},
		},
		{
			name:  "namespaces or namespace selectors",
			pool:  pool("p", allocation(namespaces("red"), namespaceSelectors(sel("env", "prod")))),
			admit: []svc{inRed, prodNs, webInProd},
			deny:  []svc{plain, webElsewhere},
		},
		{
			name:  "service selectors alone",
			pool:  pool("p", allocation(serviceSelectors(sel("app", "web"), sel("app", "api")))),
			admit: []svc{webInRed, webElsewhere, webInProd},
			deny:  []svc{plain, inRed},
		},
		{
			name:  "namespace and service must both match",
			pool:  pool("p", allocation(namespaces("red"), serviceSelectors(sel("app", "web")))),
			admit: []svc{webInRed},
			deny:  []svc{inRed, webElsewhere, webInProd},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := mustBuild(t, snap(tc.pool)).Pool("p")
			for _, s := range append(slices.Clone(tc.admit), tc.deny...) {
				halves := p.AdmitsNamespace(s.ns, s.nsLabels) && p.AdmitsService(s.labels)
				if halves != p.Admits(s.ns, s.nsLabels, s.labels) {
					t.Errorf("AdmitsNamespace && AdmitsService = %v for %+v, Admits says otherwise", halves, s)
				}
			}
			for _, s := range tc.admit {
				if !p.Admits(s.ns, s.nsLabels, s.labels) {
					t.Errorf("Admits(%+v) = false, want true", s)
				}
			}
			for _, s := range tc.deny {
				if p.Admits(s.ns, s.nsLabels, s.labels) {
					t.Errorf("Admits(%+v) = true, want false", s)
				}
			}
		})
	}
}

func TestServiceAllocationAccessors(t *testing.T) {
	p, _ := mustBuild(t, snap(pool("p", allocation(priority(3), namespaces("b", "a"))))).Pool("p")
	a := p.ServiceAllocation()
	if a.Priority() != 3 {
		t.Errorf("Priority = %d, want 3", a.Priority())
	}
	if diff := cmp.Diff([]string{"a", "b"}, a.Namespaces()); diff != "" {
		t.Errorf("Namespaces (-want +got):\n%s", diff)
	}
}
