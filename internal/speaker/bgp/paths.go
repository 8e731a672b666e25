package bgp

import (
	"fmt"
	"net/netip"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// toPath is the GoBGP path that advertises rt with next hop nh. An
// unspecified nh is replaced by GoBGP with the session's local address
// when the path is sent; only the other family of a dual-stack session
// needs an explicit one. LocalPref is sent on iBGP sessions only.
func toPath(rt Route, internal bool, nh netip.Addr) (*apiutil.Path, error) {
	p, err := basePath(rt.Prefix, nh)
	if err != nil {
		return nil, err
	}
	if internal && rt.LocalPref != 0 {
		p.Attrs = append(p.Attrs, bgppkt.NewPathAttributeLocalPref(rt.LocalPref))
	}
	if len(rt.Communities) > 0 {
		p.Attrs = append(p.Attrs, bgppkt.NewPathAttributeCommunities(rt.Communities))
	}
	if len(rt.LargeCommunities) > 0 {
		lc := make([]*bgppkt.LargeCommunity, len(rt.LargeCommunities))
		for i, c := range rt.LargeCommunities {
			lc[i] = bgppkt.NewLargeCommunity(c.GlobalAdministrator, c.LocalData1, c.LocalData2)
		}
		p.Attrs = append(p.Attrs, bgppkt.NewPathAttributeLargeCommunities(lc))
	}
	return p, nil
}

// withdrawPath is the GoBGP path that withdraws prefix.
func withdrawPath(prefix netip.Prefix, nh netip.Addr) (*apiutil.Path, error) {
	p, err := basePath(prefix, nh)
	if err != nil {
		return nil, err
	}
	p.Withdrawal = true
	return p, nil
}

// basePath has the prefix, origin IGP (as a network statement gives) and
// the next hop, which GoBGP carries in NEXT_HOP for IPv4 and in
// MP_REACH_NLRI otherwise.
func basePath(prefix netip.Prefix, nh netip.Addr) (*apiutil.Path, error) {
	if !prefix.IsValid() {
		return nil, fmt.Errorf("invalid prefix %s", prefix)
	}
	prefix = netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-unmapBits(prefix.Addr())).Masked()
	nlri, err := bgppkt.NewIPAddrPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("prefix %s: %w", prefix, err)
	}
	family := familyOf(prefix.Addr())
	if !nh.IsValid() {
		nh = netip.IPv6Unspecified()
		if family == bgppkt.RF_IPv4_UC {
			nh = netip.IPv4Unspecified()
		}
	}
	var hop bgppkt.PathAttributeInterface
	if family == bgppkt.RF_IPv4_UC && nh.Is4() {
		hop, err = bgppkt.NewPathAttributeNextHop(nh)
	} else {
		hop, err = bgppkt.NewPathAttributeMpReachNLRI(family, []bgppkt.PathNLRI{{NLRI: nlri}}, nh)
	}
	if err != nil {
		return nil, fmt.Errorf("prefix %s: next hop %s: %w", prefix, nh, err)
	}
	return &apiutil.Path{
		Family: family,
		Nlri:   nlri,
		Attrs:  []bgppkt.PathAttributeInterface{bgppkt.NewPathAttributeOrigin(bgppkt.BGP_ORIGIN_ATTR_TYPE_IGP), hop},
	}, nil
}

// unmapBits is what an IPv4-mapped IPv6 prefix loses when unmapped.
func unmapBits(a netip.Addr) int {
	if a.Is4In6() {
		return 96
	}
	return 0
}
