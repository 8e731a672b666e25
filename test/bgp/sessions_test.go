package bgp_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/test/frr"
)

// sessionsConfig: bgpd (AS 64500) has one neighbor per session of
// sessions().
const sessionsConfig = `router bgp 64500
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 2001:db8::2 remote-as 64500
 neighbor 198.51.100.3 remote-as 64502
 neighbor 198.51.100.3 password s3cret-md5
 neighbor 198.51.100.4 remote-as 64503
 neighbor 198.51.100.5 remote-as 64500
 address-family ipv6 unicast
  neighbor 2001:db8::2 activate
  neighbor 198.51.100.2 activate
 exit-address-family
!
`

// community 65001:n.
func community(n uint32) uint32 { return 65001<<16 | n }

func sessions() []bgp.Session {
	return []bgp.Session{
		// eBGP over IPv4, carrying IPv6 too.
		{Name: "ebgp-v4", MyASN: 64501, PeerASN: 64500, Address: routerV4, Source: nodeV4, DualStack: true, HoldTime: 9 * time.Second},
		// iBGP over IPv6.
		{Name: "ibgp-v6", MyASN: 64500, PeerASN: 64500, Address: routerV6},
		// TCP MD5.
		{Name: "md5", MyASN: 64502, PeerASN: 64500, Address: routerV4, Source: nodeExtra[0], Password: "s3cret-md5"},
		// The router's ASN learnt, eBGP and iBGP.
		{Name: "dyn-ext", MyASN: 64503, DynamicASN: config.DynamicASNExternal, Address: routerV4, Source: nodeExtra[1]},
		{Name: "dyn-int", MyASN: 64500, DynamicASN: config.DynamicASNInternal, Address: routerV4, Source: nodeExtra[2], RouterID: netip.MustParseAddr("198.51.100.5")},
	}
}

func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestSessions(t *testing.T) {
	l := newLab(t, sessionsConfig)
	large := config.LargeCommunity{GlobalAdministrator: 64500, LocalData1: 1, LocalData2: 2}
	sp := l.startSpeaker(t, routerConfig{Sessions: sessions(), Routes: map[string][]bgp.Route{
		// LocalPref on eBGP is not sent.
		"ebgp-v4": {
			{Prefix: prefix("203.0.113.10/32"), LocalPref: 150, Communities: []uint32{community(1)}, LargeCommunities: []config.LargeCommunity{large}},
			{Prefix: prefix("2001:db8:2::20/128")},
		},
		"ibgp-v6": {{Prefix: prefix("2001:db8:1::10/128"), LocalPref: 150, Communities: []uint32{community(2)}}},
		"md5":     {{Prefix: prefix("203.0.113.30/32")}},
		"dyn-ext": {{Prefix: prefix("203.0.113.40/32")}},
		"dyn-int": {{Prefix: prefix("203.0.113.50/32"), LocalPref: 200}},
	}})
	neighbors := map[string]string{ // session -> bgpd's neighbor
		"ebgp-v4": "198.51.100.2", "ibgp-v6": "2001:db8::2", "md5": "198.51.100.3", "dyn-ext": "198.51.100.4", "dyn-int": "198.51.100.5",
	}
	for _, n := range neighbors {
		l.waitPeer(t, "ipv4Unicast", n, "Established", 20*time.Second)
	}
	waitFor(t, "every session established for the Router", 5*time.Second, func() error {
		for s := range neighbors {
			if !sp.isEstablished(s) {
				return fmt.Errorf("%s is not", s)
			}
		}
		return nil
	})

	t.Run("routes and their attributes", func(t *testing.T) {
		for _, tc := range []struct {
			prefix, peer, nextHop, peerType string
			localPref                       *int
			communities, large              []string
		}{
			{prefix: "203.0.113.10/32", peer: "198.51.100.2", nextHop: "198.51.100.2", peerType: "external",
				communities: []string{"65001:1"}, large: []string{"64500:1:2"}},
			{prefix: "2001:db8:2::20/128", peer: "198.51.100.2", nextHop: "2001:db8::2", peerType: "external"},
			{prefix: "2001:db8:1::10/128", peer: "2001:db8::2", nextHop: "2001:db8::2", peerType: "internal",
				localPref: ptr(150), communities: []string{"65001:2"}},
			{prefix: "203.0.113.30/32", peer: "198.51.100.3", nextHop: "198.51.100.3", peerType: "external"},
			{prefix: "203.0.113.40/32", peer: "198.51.100.4", nextHop: "198.51.100.4", peerType: "external"},
			{prefix: "203.0.113.50/32", peer: "198.51.100.5", nextHop: "198.51.100.5", peerType: "internal", localPref: ptr(200)},
		} {
			t.Run(tc.prefix, func(t *testing.T) {
				paths := l.waitRoute(t, tc.prefix, true, 10*time.Second)
				if len(paths) != 1 {
					t.Fatalf("%d paths, want 1: %+v", len(paths), paths)
				}
				got := describe(paths[0])
				want := pathView{Peer: tc.peer, Type: tc.peerType, NextHop: tc.nextHop, LocalPref: tc.localPref,
					Communities: tc.communities, Large: tc.large, Origin: "IGP"}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("bgpd's path (-want +got):\n%s", d)
				}
			})
		}
	})

	t.Run("update replaces and withdraws", func(t *testing.T) {
		sp.update(t, "ebgp-v4", []bgp.Route{
			{Prefix: prefix("203.0.113.11/32"), Communities: []uint32{community(3)}},
			{Prefix: prefix("2001:db8:2::20/128"), Communities: []uint32{community(4)}},
		}, prefix("203.0.113.10/32"))
		l.waitRoute(t, "203.0.113.10/32", false, 10*time.Second)
		l.waitRoute(t, "203.0.113.11/32", true, 10*time.Second)
		waitFor(t, "the new attributes of 2001:db8:2::20/128", 10*time.Second, func() error {
			paths := l.frr.BGPRoute(t, "2001:db8:2::20/128")
			if len(paths) != 1 || !slices.Equal(describe(paths[0]).Communities, []string{"65001:4"}) {
				return fmt.Errorf("%+v", paths)
			}
			return nil
		})
		sp.update(t, "ebgp-v4", nil, prefix("2001:db8:2::20/128"))
		l.waitRoute(t, "2001:db8:2::20/128", false, 10*time.Second)
	})

	t.Run("metrics", func(t *testing.T) {
		label := `{peer="2001:db8::1:179",vrf="default"}`
		for name, want := range map[string]float64{
			"metallb_bgp_session_up":               1,
			"metallb_bgp_announced_prefixes_total": 1,
			"metallb_bgp_pending_prefixes_total":   0,
		} {
			if got := sp.metric(t, name+label); got != want {
				t.Errorf("%s%s = %g, want %g", name, label, got, want)
			}
		}
		if got := sp.metric(t, "metallb_bgp_updates_total"+label); got < 1 {
			t.Errorf("metallb_bgp_updates_total%s = %g, want at least 1", label, got)
		}
	})

	t.Run("changing one session resets it alone", func(t *testing.T) {
		before := l.frr.BGPSummary(t)["ipv4Unicast"]
		changed := sessions()
		changed[2].HoldTime = 30 * time.Second // md5
		sp.setSessions(t, changed...)
		waitFor(t, "md5 re-established", 20*time.Second, func() error {
			p := l.peer(t, "ipv4Unicast", "198.51.100.3")
			if p.State != "Established" || p.ConnectionsEstablished != before["198.51.100.3"].ConnectionsEstablished+1 {
				return fmt.Errorf("%+v", p)
			}
			return nil
		})
		l.waitRoute(t, "203.0.113.30/32", true, 10*time.Second)
		after := l.frr.BGPSummary(t)["ipv4Unicast"]
		for s, n := range neighbors {
			if s == "md5" {
				continue
			}
			if after[n].State != "Established" || after[n].ConnectionsEstablished != before[n].ConnectionsEstablished {
				t.Errorf("%s: bgpd's neighbor %s went from %+v to %+v", s, n, before[n], after[n])
			}
		}
	})

	t.Run("a removed session's routes go", func(t *testing.T) {
		sp.setSessions(t, slices.DeleteFunc(sessions(), func(s bgp.Session) bool { return s.Name == "dyn-ext" })...)
		l.waitRoute(t, "203.0.113.40/32", false, 10*time.Second)
		l.waitPeer(t, "ipv4Unicast", "198.51.100.4", "Active", 10*time.Second)
		if p := l.peer(t, "ipv4Unicast", "198.51.100.5"); p.State != "Established" {
			t.Errorf("dyn-int: %+v", p)
		}
	})

	t.Run("an invalid session changes nothing", func(t *testing.T) {
		bad := append(sessions(), bgp.Session{Name: "bad", MyASN: 64510, Address: routerV4})
		rep := sp.do(t, map[string]any{"op": "sessions", "sessions": bad})
		if rep.Error == "" {
			t.Fatal("SetSessions accepted a session with neither peerASN nor dynamicASN")
		}
		t.Logf("error: %s", rep.Error)
		if !sp.isEstablished("ebgp-v4") || l.peer(t, "ipv4Unicast", "198.51.100.4").State == "Established" {
			t.Errorf("the sessions changed after a failed SetSessions")
		}
	})
}

// pathView is what the tests compare of a bgpd path.
type pathView struct {
	Peer, Type, NextHop, Origin string
	LocalPref                   *int
	Communities, Large          []string
}

func describe(p frr.BGPPath) pathView {
	v := pathView{Peer: p.Peer.PeerID, Type: p.Peer.Type, Origin: p.Origin, LocalPref: p.LocalPref}
	for _, nh := range p.NextHops {
		if nh.Scope != "link-local" {
			v.NextHop = nh.IP
		}
	}
	if p.Community != nil {
		v.Communities = p.Community.List
	}
	if p.LargeCommunity != nil {
		v.Large = p.LargeCommunity.List
	}
	return v
}

func ptr[T any](v T) *T { return &v }
