package bgp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	api "github.com/osrg/gobgp/v4/api"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

var (
	router4 = netip.MustParseAddr("198.51.100.1")
	router6 = netip.MustParseAddr("2001:db8::1")
)

func ebgp(opts ...func(*Session)) Session {
	s := Session{Name: "peer", MyASN: 64501, PeerASN: 64500, Address: router4}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Session
		field string // in the error; "" for valid
	}{
		{name: "valid eBGP", s: ebgp()},
		{name: "valid unnumbered", s: ebgp(func(s *Session) { s.Address, s.Interface = netip.Addr{}, "eth0" })},
		{name: "valid dynamic", s: ebgp(func(s *Session) { s.PeerASN, s.DynamicASN = 0, config.DynamicASNExternal })},
		{name: "no name", s: ebgp(func(s *Session) { s.Name = "" }), field: "needs a name"},
		{name: "no address", s: ebgp(func(s *Session) { s.Address = netip.Addr{} }), field: "address"},
		{name: "address and interface", s: ebgp(func(s *Session) { s.Interface = "eth0" }), field: "interface"},
		{name: "no myASN", s: ebgp(func(s *Session) { s.MyASN = 0 }), field: "myASN"},
		{name: "no peer ASN", s: ebgp(func(s *Session) { s.PeerASN = 0 }), field: "peerASN"},
		{name: "both ASN kinds", s: ebgp(func(s *Session) { s.DynamicASN = config.DynamicASNInternal }), field: "dynamicASN"},
		{name: "unknown dynamic mode", s: ebgp(func(s *Session) { s.PeerASN, s.DynamicASN = 0, "sideways" }), field: "dynamicASN"},
		{name: "IPv6 router ID", s: ebgp(func(s *Session) { s.RouterID = router6 }), field: "routerID"},
		{name: "source of the other family", s: ebgp(func(s *Session) { s.Source = router6 }), field: "source"},
		{name: "hold time too short", s: ebgp(func(s *Session) { s.HoldTime = time.Second }), field: "holdTime"},
		{name: "keepalive beyond hold", s: ebgp(func(s *Session) { s.HoldTime, s.KeepaliveTime = 9*time.Second, 10*time.Second }), field: "keepaliveTime"},
		{name: "password too long", s: ebgp(func(s *Session) { s.Password = strings.Repeat("x", 81) }), field: "password"},
		{name: "a VRF", s: ebgp(func(s *Session) { s.VRF = "red" })},
		{name: "a VRF name no device can have", s: ebgp(func(s *Session) { s.VRF = "red/blue" }), field: "vrf"},
		{name: "a VRF name too long for a device", s: ebgp(func(s *Session) { s.VRF = strings.Repeat("v", 16) }), field: "vrf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.field != "" && (err == nil || !errors.Is(err, ErrSession) || !strings.Contains(err.Error(), tc.field)):
				t.Fatalf("error %v, want one naming %q", err, tc.field)
			}
		})
	}
}

func TestPeerConfig(t *testing.T) {
	v4 := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}
	v6 := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}
	withGR := func(a *api.AfiSafi) *api.AfiSafi {
		return &api.AfiSafi{Config: a.Config, MpGracefulRestart: &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}}
	}
	timers := func(hold, keepalive, connect uint64) *api.Timers {
		return &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: keepalive, ConnectRetry: connect}}
	}
	for _, tc := range []struct {
		name string
		s    Session
		want *api.Peer
	}{{
		name: "defaults",
		s:    ebgp(),
		want: &api.Peer{Conf: &api.PeerConf{NeighborAddress: "198.51.100.1", PeerAsn: 64500, LocalAsn: 64501},
			Timers: timers(90, 30, 120), Transport: &api.Transport{}, AfiSafis: []*api.AfiSafi{v4}},
	}, {
		name: "every setting",
		s: ebgp(func(s *Session) {
			s.Address, s.Source, s.Port, s.LocalASN = router6, netip.MustParseAddr("2001:db8::2"), 1179, 65000
			s.HoldTime, s.KeepaliveTime, s.ConnectTime = 9*time.Second, 2*time.Second, 1500*time.Millisecond
			s.Password, s.EBGPMultiHop, s.GracefulRestart, s.DualStack, s.VRF = "pw", true, true, true, "red"
		}),
		want: &api.Peer{Conf: &api.PeerConf{NeighborAddress: "2001:db8::1", PeerAsn: 64500, LocalAsn: 65000, AuthPassword: "pw"},
			Timers:          timers(9, 2, 2),
			Transport:       &api.Transport{LocalAddress: "2001:db8::2", RemotePort: 1179, BindInterface: "red"},
			EbgpMultihop:    &api.EbgpMultihop{Enabled: true, MultihopTtl: 255},
			GracefulRestart: &api.GracefulRestart{Enabled: true, RestartTime: 120, LocalRestarting: true, DeferralTime: 1},
			AfiSafis:        []*api.AfiSafi{withGR(v6), withGR(v4)}},
	}, {
		name: "unnumbered, dynamic ASN",
		s: ebgp(func(s *Session) {
			s.Address, s.Interface, s.PeerASN, s.DynamicASN = netip.Addr{}, "eth1", 0, config.DynamicASNInternal
		}),
		want: &api.Peer{Conf: &api.PeerConf{NeighborInterface: "eth1", LocalAsn: 64501},
			Timers: timers(90, 30, 120), Transport: &api.Transport{}, AfiSafis: []*api.AfiSafi{v6}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.s.peerConfig(DefaultRestartTime, true), protocmp.Transform()); d != "" {
				t.Errorf("peer config (-want +got):\n%s", d)
			}
		})
	}
}

func TestSessionDerived(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        Session
		internal bool
		label    string
	}{
		{name: "eBGP", s: ebgp(), label: "198.51.100.1:179"},
		{name: "iBGP", s: ebgp(func(s *Session) { s.PeerASN = 64501 }), internal: true, label: "198.51.100.1:179"},
		{name: "iBGP through localASN", s: ebgp(func(s *Session) { s.LocalASN = 64500 }), internal: true, label: "198.51.100.1:179"},
		{name: "dynamic internal", s: ebgp(func(s *Session) { s.PeerASN, s.DynamicASN = 0, config.DynamicASNInternal }), internal: true, label: "198.51.100.1:179"},
		{name: "IPv6, port", s: ebgp(func(s *Session) { s.Address, s.Port = router6, 1179 }), label: "2001:db8::1:1179"},
		{name: "unnumbered", s: ebgp(func(s *Session) { s.Address, s.Interface = netip.Addr{}, "eth1" }), label: "eth1:179"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.internal(); got != tc.internal {
				t.Errorf("internal = %v, want %v", got, tc.internal)
			}
			if got := tc.s.peerLabel(); got != tc.label {
				t.Errorf("peer label %q, want %q", got, tc.label)
			}
		})
	}
}

func TestAcceptsASN(t *testing.T) {
	for _, tc := range []struct {
		mode config.DynamicASNMode
		asn  uint32
		want bool
	}{
		{config.DynamicASNInternal, 64501, true},
		{config.DynamicASNInternal, 64500, false},
		{config.DynamicASNExternal, 64500, true},
		{config.DynamicASNExternal, 64501, false},
		{config.DynamicASNNone, 64500, true},
	} {
		r := &runner{cfg: ebgp(func(s *Session) { s.DynamicASN = tc.mode })}
		if got := r.acceptsASN(tc.asn); got != tc.want {
			t.Errorf("%q accepts %d: %v, want %v", tc.mode, tc.asn, got, tc.want)
		}
	}
}

func TestRouterID(t *testing.T) {
	set := netip.MustParseAddr("198.51.100.9")
	if got := ebgp(func(s *Session) { s.RouterID = set }).routerID(Options{NodeAddress: router4}); got != set {
		t.Errorf("set router ID: %s", got)
	}
	if got := ebgp().routerID(Options{NodeAddress: router4}); got != router4 {
		t.Errorf("IPv4 node: %s", got)
	}
	a := ebgp().routerID(Options{NodeAddress: router6, NodeName: "node-a"})
	b := ebgp().routerID(Options{NodeAddress: router6, NodeName: "node-b"})
	if !a.Is4() || a == b {
		t.Errorf("IPv6 nodes: %s and %s, want two distinct IPv4 IDs", a, b)
	}
}

func TestEqual(t *testing.T) {
	a, b := ebgp(func(s *Session) { s.BFD = &bfd.Profile{DetectMultiplier: 3} }), ebgp(func(s *Session) { s.BFD = &bfd.Profile{DetectMultiplier: 3} })
	if !a.Equal(b) {
		t.Error("equal BFD profiles behind distinct pointers differ")
	}
	b.BFD.DetectMultiplier = 5
	if a.Equal(b) || a.Equal(ebgp()) {
		t.Error("distinct BFD settings are equal")
	}
}
