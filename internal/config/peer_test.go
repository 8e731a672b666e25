package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
)

func TestPeerRules(t *testing.T) {
	spec := func(f func(*v1beta2.BGPPeerSpec)) v1beta2.BGPPeer { return peer("p", peerSpec(f)) }
	secretRef := peerSpec(func(s *v1beta2.BGPPeerSpec) { s.PasswordSecret = corev1.SecretReference{Name: "md5"} })
	opaque := basicAuth("md5", "x")
	opaque.Type = corev1.SecretTypeOpaque
	noKey := basicAuth("md5", "x")
	noKey.Data = map[string][]byte{"username": []byte("u")}
	runRules(t, []ruleCase{
		{name: "valid", snap: snap(peer("p"))},
		{
			name: "myASN missing",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.MyASN = 0 })),
			want: []string{`BGPPeer "p": spec.myASN: must be set`},
		},
		{
			name: "peerASN and dynamicASN",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.DynamicASN = v1beta2.ExternalASNMode })),
			want: []string{`BGPPeer "p": spec.dynamicASN: peerASN and dynamicASN are mutually exclusive`},
		},
		{
			name: "neither peerASN nor dynamicASN",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.ASN = 0 })),
			want: []string{`BGPPeer "p": spec.peerASN: one of peerASN and dynamicASN must be set`},
		},
		{
			name: "unknown dynamicASN",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.ASN, s.DynamicASN = 0, "sometimes" })),
			want: []string{`BGPPeer "p": spec.dynamicASN: unsupported value "sometimes": must be "internal" or "external"`},
		},
		{
			name: "peerAddress and interface",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.Interface = "eth0" })),
			want: []string{`BGPPeer "p": spec.interface: peerAddress and interface are mutually exclusive`},
		},
		{
			name: "neither peerAddress nor interface",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.Address = "" })),
			want: []string{`BGPPeer "p": spec.peerAddress: one of peerAddress and interface must be set`},
		},
		{
			name: "bad peerAddress",
			snap: snap(peer("p", peerAddress("router-1"))),
			want: []string{`BGPPeer "p": spec.peerAddress: "router-1" is not an IP address`},
		},
		{
			name: "zoned peerAddress",
			snap: snap(peer("p", peerAddress("fe80::1%eth0"))),
			want: []string{`BGPPeer "p": spec.peerAddress: "fe80::1%eth0" has an IPv6 zone, which is not supported`},
		},
		{
			name: "interface with a line break",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.Address, s.Interface = "", "eth0\n neighbor x" })),
			want: []string{`BGPPeer "p": spec.interface: must not contain line breaks`},
		},
		{
			name: "bad sourceAddress",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.SrcAddress = "10.0.0" })),
			want: []string{`BGPPeer "p": spec.sourceAddress: "10.0.0" is not an IP address`},
		},
		{
			name: "sourceAddress of the other family",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.SrcAddress = "2001:db8::1" })),
			want: []string{`BGPPeer "p": spec.sourceAddress: 2001:db8::1 and peerAddress 198.51.100.1 are of different IP families`},
		},
		{
			name: "holdTime too short",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.HoldTime = dur(2 * time.Second) })),
			want: []string{`BGPPeer "p": spec.holdTime: 2s must be 0 or at least 3s`},
		},
		{
			name: "negative holdTime",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.HoldTime = dur(-time.Second) })),
			want: []string{`BGPPeer "p": spec.holdTime: -1s must not be negative`},
		},
		{
			name: "keepaliveTime equal to holdTime",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.HoldTime, s.KeepaliveTime = dur(9*time.Second), dur(9*time.Second) })),
			want: []string{`BGPPeer "p": spec.keepaliveTime: 9s must be shorter than holdTime (9s)`},
		},
		{
			name: "keepalive with holdTime 0",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.HoldTime, s.KeepaliveTime = dur(0), dur(30*time.Second) })),
			want: []string{`BGPPeer "p": spec.keepaliveTime: 30s must be shorter than holdTime (0s)`},
		},
		{
			name: "keepaliveTime alone too short for a derived holdTime",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.KeepaliveTime = dur(500 * time.Millisecond) })),
			want: []string{`BGPPeer "p": spec.keepaliveTime: 500ms is too short: with holdTime unset it makes a holdTime of 1.5s (3 × keepaliveTime), which must be 0 or at least 3s`},
		},
		{
			name: "connectTime out of range",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.ConnectTime = dur(70000 * time.Second) })),
			want: []string{`BGPPeer "p": spec.connectTime: 19h26m40s must be between 1s and 65535s`},
		},
		{
			name: "connectTime not whole seconds",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.ConnectTime = dur(1500 * time.Millisecond) })),
			want: []string{`BGPPeer "p": spec.connectTime: 1.5s must be a whole number of seconds`},
		},
		{
			name: "bad routerID",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.RouterID = "node-1" })),
			want: []string{`BGPPeer "p": spec.routerID: "node-1" is not an IP address`},
		},
		{
			name: "IPv6 routerID",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.RouterID = "2001:db8::1" })),
			want: []string{`BGPPeer "p": spec.routerID: 2001:db8::1 is not an IPv4 address`},
		},
		{
			name: "bad and duplicate node selectors",
			snap: snap(peer("p", peerNodes(
				metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}},
				sel("rack", "1"), sel("rack", "1"),
			))),
			want: []string{
				`BGPPeer "p": spec.nodeSelectors[0]: invalid label selector: key: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`BGPPeer "p": spec.nodeSelectors[2]: duplicate of spec.nodeSelectors[1]`,
			},
		},
		{
			name: "password and passwordSecret",
			snap: snap(peer("p", secretRef, peerSpec(func(s *v1beta2.BGPPeerSpec) { s.Password = "x" })), basicAuth("md5", "x")),
			want: []string{`BGPPeer "p": spec.passwordSecret: password and passwordSecret are mutually exclusive`},
		},
		{
			name: "password with a line break",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.Password = "a\nb" })),
			want: []string{`BGPPeer "p": spec.password: must not contain line breaks`},
		},
		{
			name: "secret missing",
			snap: snap(peer("p", secretRef)),
			want: []string{`BGPPeer "p": spec.passwordSecret.name: Secret "md5" does not exist`},
		},
		{
			name: "secret of the wrong type",
			snap: snap(peer("p", secretRef), opaque),
			want: []string{`BGPPeer "p": spec.passwordSecret.name: Secret "md5" is of type "Opaque", want "kubernetes.io/basic-auth"`},
		},
		{
			name: "secret without a password",
			snap: snap(peer("p", secretRef), noKey),
			want: []string{`BGPPeer "p": spec.passwordSecret.name: Secret "md5" has no "password" key`},
		},
		{
			name: "secret password with a line break",
			snap: snap(peer("p", secretRef), basicAuth("md5", "a\r\nb")),
			want: []string{`BGPPeer "p": spec.passwordSecret.name: Secret "md5": the password must not contain line breaks`},
		},
		{
			name: "missing BFD profile",
			snap: snap(peer("p", bfdProfileRef("fast"))),
			want: []string{`BGPPeer "p": spec.bfdProfile: BFDProfile "fast" does not exist`},
		},
		{
			name: "invalid BFD profile",
			snap: snap(peer("p", bfdProfileRef("fast")), bfd("fast", bfdSpec(func(s *v1beta1.BFDProfileSpec) { s.DetectMultiplier = ptr(uint32(1)) }))),
			want: []string{
				`BGPPeer "p": spec.bfdProfile: BFDProfile "fast" is invalid`,
				`BFDProfile "fast": spec.detectMultiplier: 1 is out of range 2-255`,
			},
		},
		{
			name: "echo mode with an IPv6 peer",
			snap: snap(peer("p", peerAddress("2001:db8::1"), bfdProfileRef("echo")), bfd("echo", echo())),
			want: []string{`BGPPeer "p": spec.bfdProfile: BFDProfile "echo" has echo mode on, which BFD does not support for the IPv6 peer 2001:db8::1`},
		},
		{
			name: "echo mode with an IPv4 peer",
			snap: snap(peer("p", bfdProfileRef("echo")), bfd("echo", echo())),
		},
		{
			name: "ebgpMultiHop with iBGP",
			snap: snap(peer("p", ibgp(), peerSpec(func(s *v1beta2.BGPPeerSpec) { s.EBGPMultiHop = true }))),
			want: []string{`BGPPeer "p": spec.ebgpMultiHop: not allowed for an iBGP session (peer AS 65000 equals local AS 65000)`},
		},
		{
			name: "ebgpMultiHop with dynamic internal AS",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.ASN, s.DynamicASN, s.EBGPMultiHop = 0, v1beta2.InternalASNMode, true })),
			want: []string{`BGPPeer "p": spec.ebgpMultiHop: not allowed for an iBGP session (dynamicASN is internal)`},
		},
		{
			name: "ebgpMultiHop where localASN makes the session iBGP",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.LocalASN, s.EBGPMultiHop = 65001, true })),
			want: []string{`BGPPeer "p": spec.ebgpMultiHop: not allowed for an iBGP session (peer AS 65001 equals local AS 65001)`},
		},
		{
			name: "ebgpMultiHop with eBGP",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.EBGPMultiHop = true })),
		},
		{
			name: "vrf with a line break",
			snap: snap(spec(func(s *v1beta2.BGPPeerSpec) { s.VRFName = "red\n" })),
			want: []string{`BGPPeer "p": spec.vrf: must not contain line breaks`},
		},
	})
}

func TestPeerSessionsUnique(t *testing.T) {
	runRules(t, []ruleCase{
		{
			name: "same neighbor on every node: the newer peer is at fault",
			snap: snap(
				peer("a", created[v1beta2.BGPPeer](2)),
				peer("b", created[v1beta2.BGPPeer](1), peerSpec(func(s *v1beta2.BGPPeerSpec) { s.Port = 1179 })),
			),
			want: []string{`BGPPeer "a": spec.peerAddress: BGPPeer "b" already has a session to 198.51.100.1 (vrf ""), and their nodeSelectors may select the same node`},
		},
		{
			name: "same interface, overlapping selectors",
			snap: snap(
				peer("a", peerSpec(func(s *v1beta2.BGPPeerSpec) { s.Address, s.Interface = "", "eth1" }), peerNodes(sel("rack", "1"))),
				peer("b", peerSpec(func(s *v1beta2.BGPPeerSpec) { s.Address, s.Interface = "", "eth1" }), peerNodes(sel("zone", "a"))),
			),
			want: []string{`BGPPeer "b": spec.interface: BGPPeer "a" already has a session to interface eth1 (vrf ""), and their nodeSelectors may select the same node`},
		},
		{
			name: "same neighbor from disjoint nodes",
			snap: snap(peer("a", peerNodes(sel("rack", "1"))), peer("b", peerNodes(sel("rack", "2")))),
		},
		{
			name: "same neighbor in another VRF",
			snap: snap(peer("a"), peer("b", peerSpec(func(s *v1beta2.BGPPeerSpec) { s.VRFName = "red" }))),
		},
	})
}

func TestPeerModel(t *testing.T) {
	type view struct {
		MyASN, PeerASN, LocalASN              uint32
		Dynamic                               DynamicASNMode
		Address, Source, RouterID             netip.Addr
		Interface, Password, BFD, VRF         string
		Port                                  uint16
		Hold, Keepalive, Connect              time.Duration
		IBGP, GR, MultiHop, DisableMP, DualAF bool
	}
	see := func(p *Peer) view {
		return view{p.MyASN(), p.PeerASN(), p.LocalASN(), p.DynamicASN(), p.Address(), p.SourceAddress(), p.RouterID(),
			p.Interface(), p.Password(), p.BFDProfile(), p.VRF(), p.Port(), p.HoldTime(), p.KeepaliveTime(), p.ConnectTime(),
			p.IsIBGP(), p.EnableGracefulRestart(), p.EBGPMultiHop(), p.DisableMP(), p.DualStackAddressFamily()}
	}
	addr := netip.MustParseAddr
	cases := []struct {
		name string
		objs []any
		want view
	}{
		{
			name: "defaults",
			objs: []any{peer("p")},
			want: view{MyASN: 65000, PeerASN: 65001, Address: addr("198.51.100.1"), Port: 179, Hold: 90 * time.Second, Keepalive: 30 * time.Second},
		},
		{
			name: "holdTime alone",
			objs: []any{peer("p", peerSpec(func(s *v1beta2.BGPPeerSpec) { s.HoldTime = dur(9 * time.Second) }))},
			want: view{MyASN: 65000, PeerASN: 65001, Address: addr("198.51.100.1"), Port: 179, Hold: 9 * time.Second, Keepalive: 3 * time.Second},
		},
		{
			name: "keepaliveTime alone",
			objs: []any{peer("p", peerSpec(func(s *v1beta2.BGPPeerSpec) { s.KeepaliveTime = dur(10 * time.Second) }))},
			want: view{MyASN: 65000, PeerASN: 65001, Address: addr("198.51.100.1"), Port: 179, Hold: 30 * time.Second, Keepalive: 10 * time.Second},
		},
		{
			name: "keepalives off",
			objs: []any{peer("p", peerSpec(func(s *v1beta2.BGPPeerSpec) { s.HoldTime, s.KeepaliveTime = dur(0), dur(0) }))},
			want: view{MyASN: 65000, PeerASN: 65001, Address: addr("198.51.100.1"), Port: 179},
		},
		{
			name: "everything set",
			objs: []any{
				peer("p", ibgp(), bfdProfileRef("slow"), peerSpec(func(s *v1beta2.BGPPeerSpec) {
					s.Address, s.Interface, s.SrcAddress, s.RouterID = "", "eth1", "2001:db8::2", "192.0.2.1"
					s.Port, s.ConnectTime, s.VRFName = 1179, dur(5*time.Second), "red"
					s.PasswordSecret = corev1.SecretReference{Name: "md5"}
					s.EnableGracefulRestart, s.DisableMP, s.DualStackAddressFamily = true, true, true
				})),
				basicAuth("md5", "s3cret"), bfd("slow"),
			},
			want: view{MyASN: 65000, PeerASN: 65000, Interface: "eth1", Source: addr("2001:db8::2"), RouterID: addr("192.0.2.1"),
				Password: "s3cret", BFD: "slow", VRF: "red", Port: 1179, Hold: 90 * time.Second, Keepalive: 30 * time.Second,
				Connect: 5 * time.Second, IBGP: true, GR: true, DisableMP: true, DualAF: true},
		},
		{
			name: "dynamic external with a local AS",
			objs: []any{peer("p", peerSpec(func(s *v1beta2.BGPPeerSpec) {
				s.ASN, s.DynamicASN, s.LocalASN, s.Password, s.EBGPMultiHop = 0, v1beta2.ExternalASNMode, 64999, "inline", true
			}))},
			want: view{MyASN: 65000, LocalASN: 64999, Dynamic: DynamicASNExternal, Address: addr("198.51.100.1"), Password: "inline",
				Port: 179, Hold: 90 * time.Second, Keepalive: 30 * time.Second, MultiHop: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := mustBuild(t, snap(tc.objs...)).Peer("p")
			if !ok {
				t.Fatal("peer p missing")
			}
			if diff := cmp.Diff(tc.want, see(p), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeerSelectsNode(t *testing.T) {
	cfg := mustBuild(t, snap(peer("all"), peer("rack1", peerAddress("198.51.100.2"), peerNodes(sel("rack", "1")))))
	all, _ := cfg.Peer("all")
	rack1, _ := cfg.Peer("rack1")
	node := map[string]string{"rack": "2"}
	if !all.SelectsNode(node) || rack1.SelectsNode(node) {
		t.Errorf("SelectsNode(rack=2): all=%v rack1=%v, want true, false", all.SelectsNode(node), rack1.SelectsNode(node))
	}
	if len(rack1.NodeSelectors()) != 1 {
		t.Errorf("NodeSelectors = %v, want one", rack1.NodeSelectors())
	}
}
