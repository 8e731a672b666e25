package config

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
)

// Test objects are built with functional options: pool("gold",
// addresses("192.0.2.0/24"), autoAssign(false)). Every builder starts from
// the smallest valid object of its kind.

type (
	poolOpt = func(*v1beta1.IPAddressPool)
	l2Opt   = func(*v1beta1.L2Advertisement)
	bgpOpt  = func(*v1beta1.BGPAdvertisement)
	peerOpt = func(*v1beta2.BGPPeer)
	bfdOpt  = func(*v1beta1.BFDProfile)
	commOpt = func(*v1beta1.Community)
)

func apply[T any](obj T, opts []func(*T)) T {
	for _, o := range opts {
		o(&obj)
	}
	return obj
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "steadylb-system"}
}

// epoch is the creation time of objects built without created().
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// created sets an object's creationTimestamp to minute minutes after epoch.
func created[T any, P interface {
	*T
	metav1.Object
}](minute int) func(*T) {
	return func(o *T) {
		P(o).SetCreationTimestamp(metav1.NewTime(epoch.Add(time.Duration(minute) * time.Minute)))
	}
}

// labelled sets an object's labels from key, value pairs.
func labelled[T any, P interface {
	*T
	metav1.Object
}](kv ...string) func(*T) {
	return func(o *T) {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		P(o).SetLabels(l)
	}
}

func sel(kv ...string) metav1.LabelSelector {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: l}
}

func ptr[T any](v T) *T { return &v }

// --- IPAddressPool

func pool(name string, opts ...poolOpt) v1beta1.IPAddressPool {
	return apply(v1beta1.IPAddressPool{ObjectMeta: meta(name), Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"192.0.2.0/24"}}}, opts)
}

func addresses(a ...string) poolOpt {
	return func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = a }
}

func autoAssign(b bool) poolOpt {
	return func(p *v1beta1.IPAddressPool) { p.Spec.AutoAssign = &b }
}

func avoidBuggyIPs() poolOpt {
	return func(p *v1beta1.IPAddressPool) { p.Spec.AvoidBuggyIPs = true }
}

func allocation(opts ...func(*v1beta1.ServiceAllocation)) poolOpt {
	return func(p *v1beta1.IPAddressPool) {
		p.Spec.ServiceAllocation = ptr(apply(v1beta1.ServiceAllocation{}, opts))
	}
}

func priority(n int) func(*v1beta1.ServiceAllocation) {
	return func(a *v1beta1.ServiceAllocation) { a.Priority = n }
}

func namespaces(ns ...string) func(*v1beta1.ServiceAllocation) {
	return func(a *v1beta1.ServiceAllocation) { a.Namespaces = ns }
}

func namespaceSelectors(s ...metav1.LabelSelector) func(*v1beta1.ServiceAllocation) {
	return func(a *v1beta1.ServiceAllocation) { a.NamespaceSelectors = s }
}

func serviceSelectors(s ...metav1.LabelSelector) func(*v1beta1.ServiceAllocation) {
	return func(a *v1beta1.ServiceAllocation) { a.ServiceSelectors = s }
}

// --- L2Advertisement

func l2(name string, opts ...l2Opt) v1beta1.L2Advertisement {
	return apply(v1beta1.L2Advertisement{ObjectMeta: meta(name)}, opts)
}

func l2Spec(f func(*v1beta1.L2AdvertisementSpec)) l2Opt {
	return func(a *v1beta1.L2Advertisement) { f(&a.Spec) }
}

// --- BGPAdvertisement

func bgpAdv(name string, opts ...bgpOpt) v1beta1.BGPAdvertisement {
	return apply(v1beta1.BGPAdvertisement{ObjectMeta: meta(name)}, opts)
}

func bgpSpec(f func(*v1beta1.BGPAdvertisementSpec)) bgpOpt {
	return func(a *v1beta1.BGPAdvertisement) { f(&a.Spec) }
}

func advPools(names ...string) bgpOpt {
	return bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.IPAddressPools = names })
}

func advPeers(names ...string) bgpOpt {
	return bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.Peers = names })
}

func localPref(p uint32) bgpOpt {
	return bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.LocalPref = p })
}

func aggLen(n int32) bgpOpt {
	return bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.AggregationLength = &n })
}

func aggLenV6(n int32) bgpOpt {
	return bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.AggregationLengthV6 = &n })
}

func communities(c ...string) bgpOpt {
	return bgpSpec(func(s *v1beta1.BGPAdvertisementSpec) { s.Communities = c })
}

func advNodes(s ...metav1.LabelSelector) bgpOpt {
	return bgpSpec(func(spec *v1beta1.BGPAdvertisementSpec) { spec.NodeSelectors = s })
}

// --- BGPPeer

// peer is an eBGP peer: AS 65000 to AS 65001 at 192.0.2.254.
func peer(name string, opts ...peerOpt) v1beta2.BGPPeer {
	return apply(v1beta2.BGPPeer{ObjectMeta: meta(name), Spec: v1beta2.BGPPeerSpec{
		MyASN: 65000, ASN: 65001, Address: "198.51.100.1",
	}}, opts)
}

func peerSpec(f func(*v1beta2.BGPPeerSpec)) peerOpt {
	return func(p *v1beta2.BGPPeer) { f(&p.Spec) }
}

func ibgp() peerOpt { return peerSpec(func(s *v1beta2.BGPPeerSpec) { s.ASN = s.MyASN }) }

func peerAddress(a string) peerOpt {
	return peerSpec(func(s *v1beta2.BGPPeerSpec) { s.Address = a })
}

func bfdProfileRef(name string) peerOpt {
	return peerSpec(func(s *v1beta2.BGPPeerSpec) { s.BFDProfile = name })
}

func peerNodes(s ...metav1.LabelSelector) peerOpt {
	return peerSpec(func(spec *v1beta2.BGPPeerSpec) { spec.NodeSelectors = s })
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// --- BFDProfile

func bfd(name string, opts ...bfdOpt) v1beta1.BFDProfile {
	return apply(v1beta1.BFDProfile{ObjectMeta: meta(name)}, opts)
}

func bfdSpec(f func(*v1beta1.BFDProfileSpec)) bfdOpt {
	return func(b *v1beta1.BFDProfile) { f(&b.Spec) }
}

func echo() bfdOpt { return bfdSpec(func(s *v1beta1.BFDProfileSpec) { s.EchoMode = ptr(true) }) }

// --- Community

// community builds a Community from name, value pairs.
func community(name string, nv ...string) v1beta1.Community {
	c := v1beta1.Community{ObjectMeta: meta(name)}
	for i := 0; i+1 < len(nv); i += 2 {
		c.Spec.Communities = append(c.Spec.Communities, v1beta1.CommunityAlias{Name: nv[i], Value: nv[i+1]})
	}
	return c
}

func withCommunityOpts(c v1beta1.Community, opts ...commOpt) v1beta1.Community { return apply(c, opts) }

// --- Secret

func basicAuth(name, password string) corev1.Secret {
	return corev1.Secret{ObjectMeta: meta(name), Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"password": []byte(password)}}
}

// snap puts objects of any configuration kind into a Snapshot.
func snap(objs ...any) Snapshot {
	var s Snapshot
	for _, o := range objs {
		switch o := o.(type) {
		case v1beta1.IPAddressPool:
			s.Pools = append(s.Pools, o)
		case v1beta1.L2Advertisement:
			s.L2Advertisements = append(s.L2Advertisements, o)
		case v1beta1.BGPAdvertisement:
			s.BGPAdvertisements = append(s.BGPAdvertisements, o)
		case v1beta2.BGPPeer:
			s.Peers = append(s.Peers, o)
		case v1beta1.BFDProfile:
			s.BFDProfiles = append(s.BFDProfiles, o)
		case v1beta1.Community:
			s.Communities = append(s.Communities, o)
		case corev1.Secret:
			if s.PasswordSecrets == nil {
				s.PasswordSecrets = map[string]corev1.Secret{}
			}
			s.PasswordSecrets[o.Name] = o
		default:
			panic("snap: unsupported object")
		}
	}
	return s
}

// errorLines returns the lines a user reads for err, nil for no error.
func errorLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Build error is a %T, want ErrorList: %v", err, err)
	}
	lines := make([]string, len(list))
	for i, e := range list {
		lines[i] = e.Error()
	}
	return lines
}

// ruleCase is a snapshot and the exact errors Build must report for it.
type ruleCase struct {
	name string
	snap Snapshot
	want []string
}

func runRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.snap)
			if diff := cmp.Diff(tc.want, errorLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// mustBuild builds a snapshot that must be valid.
func mustBuild(t *testing.T, s Snapshot) *Config {
	t.Helper()
	cfg, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return cfg
}
