package bgp

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/steadylb/steadylb/internal/config"
)

// attrs describes a path's attributes by type, for comparing.
func attrs(p interface {
	GetType() bgppkt.BGPAttrType
	String() string
}) string {
	return p.GetType().String() + " " + p.String()
}

func TestToPath(t *testing.T) {
	large := []config.LargeCommunity{{GlobalAdministrator: 64500, LocalData1: 1, LocalData2: 2}}
	for _, tc := range []struct {
		name     string
		rt       Route
		internal bool
		nh       netip.Addr
		family   bgppkt.Family
		want     []string
	}{{
		name:   "IPv4, next hop left to GoBGP",
		rt:     Route{Prefix: netip.MustParsePrefix("203.0.113.10/32")},
		family: bgppkt.RF_IPv4_UC,
		want:   []string{"BGP_ATTR_TYPE_ORIGIN {Origin: i}", "BGP_ATTR_TYPE_NEXT_HOP {Nexthop: 0.0.0.0}"},
	}, {
		name:   "LocalPref is not sent on eBGP",
		rt:     Route{Prefix: netip.MustParsePrefix("203.0.113.10/32"), LocalPref: 150, Communities: []uint32{65001<<16 | 1}, LargeCommunities: large},
		family: bgppkt.RF_IPv4_UC,
		want: []string{"BGP_ATTR_TYPE_ORIGIN {Origin: i}", "BGP_ATTR_TYPE_NEXT_HOP {Nexthop: 0.0.0.0}",
			"BGP_ATTR_TYPE_COMMUNITIES {Communities: 65001:1}", "BGP_ATTR_TYPE_LARGE_COMMUNITY {LargeCommunity: [ 64500:1:2]}"},
	}, {
		name:     "LocalPref on iBGP",
		rt:       Route{Prefix: netip.MustParsePrefix("203.0.113.0/24"), LocalPref: 150},
		internal: true,
		family:   bgppkt.RF_IPv4_UC,
		want:     []string{"BGP_ATTR_TYPE_ORIGIN {Origin: i}", "BGP_ATTR_TYPE_NEXT_HOP {Nexthop: 0.0.0.0}", "BGP_ATTR_TYPE_LOCAL_PREF {LocalPref: 150}"},
	}, {
		name:   "IPv6 with the next hop of a dual-stack session",
		rt:     Route{Prefix: netip.MustParsePrefix("2001:db8:1::10/128")},
		nh:     netip.MustParseAddr("2001:db8::2"),
		family: bgppkt.RF_IPv6_UC,
		want:   []string{"BGP_ATTR_TYPE_ORIGIN {Origin: i}", "BGP_ATTR_TYPE_MP_REACH_NLRI {MpReach(ipv6-unicast): {Nexthop: 2001:db8::2, NLRIs: [2001:db8:1::10/128:0]}}"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := toPath(tc.rt, tc.internal, tc.nh)
			if err != nil {
				t.Fatal(err)
			}
			if p.Family != tc.family || p.Nlri.String() != tc.rt.Prefix.String() || p.Withdrawal {
				t.Errorf("family %v, NLRI %v, withdrawal %v", p.Family, p.Nlri, p.Withdrawal)
			}
			var got []string
			for _, a := range p.Attrs {
				got = append(got, attrs(a))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("attributes (-want +got):\n%s", d)
			}
		})
	}
}

func TestWithdrawPath(t *testing.T) {
	for _, s := range []string{"203.0.113.10/32", "2001:db8:1::/64", "::ffff:203.0.113.10/128"} {
		p, err := withdrawPath(netip.MustParsePrefix(s), netip.Addr{})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !p.Withdrawal || p.Family != familyOf(netip.MustParsePrefix(s).Addr()) {
			t.Errorf("%s: withdrawal %v, family %v", s, p.Withdrawal, p.Family)
		}
	}
	if _, err := withdrawPath(netip.Prefix{}, netip.Addr{}); err == nil {
		t.Error("an invalid prefix was accepted")
	}
}
