package config

import (
	"fmt"
	"slices"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// Aggregation defaults: no aggregation, every address its own route.
const (
	DefaultAggregationLength   = 32
	DefaultAggregationLengthV6 = 128
)

// BGPAdvertisement is a validated BGPAdvertisement with its defaults
// applied and its community aliases resolved. It is immutable.
type BGPAdvertisement struct {
	scope
	name                string
	aggregationLength   int
	aggregationLengthV6 int
	localPref           uint32
	communities         []uint32 // sorted, unique
	largeCommunities    []LargeCommunity
	peers               []string // sorted; empty means every peer
}

// Name is the advertisement's metadata.name.
func (a *BGPAdvertisement) Name() string { return a.name }

// AggregationLength is the prefix length IPv4 addresses are announced with
// (default 32).
func (a *BGPAdvertisement) AggregationLength() int { return a.aggregationLength }

// AggregationLengthV6 is the prefix length IPv6 addresses are announced with
// (default 128).
func (a *BGPAdvertisement) AggregationLengthV6() int { return a.aggregationLengthV6 }

// LocalPref is the LOCAL_PREF attribute sent to iBGP peers; ok is false when
// unset (the API cannot express 0).
func (a *BGPAdvertisement) LocalPref() (pref uint32, ok bool) { return a.localPref, a.localPref != 0 }

// Communities are the standard communities (RFC 1997) to attach, sorted,
// each as AS<<16 | value, aliases resolved.
func (a *BGPAdvertisement) Communities() []uint32 { return slices.Clone(a.communities) }

// LargeCommunities are the large communities (RFC 8092) to attach, sorted.
func (a *BGPAdvertisement) LargeCommunities() []LargeCommunity {
	return slices.Clone(a.largeCommunities)
}

// Peers are the names of the BGPPeers to announce to, sorted; empty means
// every peer. A listed peer that is invalid is not in the Config: nothing is
// announced to it.
func (a *BGPAdvertisement) Peers() []string { return slices.Clone(a.peers) }

// SelectsPeer reports whether the advertisement announces to the named peer.
func (a *BGPAdvertisement) SelectsPeer(name string) bool {
	if len(a.peers) == 0 {
		return true
	}
	_, found := slices.BinarySearch(a.peers, name)
	return found
}

// bgpEnv is what a BGPAdvertisement refers to.
type bgpEnv struct {
	pools   []*Pool // valid pools, by name
	byName  map[string]*Pool
	peers   *catalog[Peer]
	bfds    *catalog[BFDProfile]
	aliases *aliasTable
}

// buildBGPAdvertisements validates every advertisement. advs are in age
// order: of two that disagree on localPref, the newer is at fault.
func buildBGPAdvertisements(c *collector, advs []*v1beta1.BGPAdvertisement, env *bgpEnv) []*BGPAdvertisement {
	var accepted []*BGPAdvertisement
	for _, in := range advs {
		rep := c.object(KindBGPAdvertisement, in.Name)
		a := buildBGPAdvertisement(rep, in, env)
		if !rep.ok() {
			continue
		}
		checkLocalPrefConflicts(rep, a, accepted, env)
		if rep.ok() {
			accepted = append(accepted, a)
		}
	}
	return accepted
}

func buildBGPAdvertisement(rep *reporter, in *v1beta1.BGPAdvertisement, env *bgpEnv) *BGPAdvertisement {
	s := &in.Spec
	a := &BGPAdvertisement{
		name:                in.Name,
		aggregationLength:   aggregation(rep, "aggregationLength", s.AggregationLength, DefaultAggregationLength),
		aggregationLengthV6: aggregation(rep, "aggregationLengthV6", s.AggregationLengthV6, DefaultAggregationLengthV6),
		localPref:           s.LocalPref,
		scope:               buildScope(rep, s.IPAddressPools, s.IPAddressPoolSelectors, s.NodeSelectors, s.ServiceSelectors, env.pools),
	}
	checkSelectorsVsAggregation(rep, s)
	a.resolveCommunities(rep, s.Communities, env.aliases)
	a.resolvePeers(rep, s.Peers, env.peers)
	if !rep.ok() {
		return a
	}
	a.checkAggregationVsPools(rep, env)
	a.checkLocalPrefPeers(rep, env)
	a.checkEchoOverIPv6(rep, env)
	return a
}

func aggregation(rep *reporter, name string, v *int32, def int) int {
	if v == nil {
		return def
	}
	if *v < 1 || int(*v) > def {
		rep.add(specPath.Child(name), "%d is out of range 1-%d", *v, def)
	}
	return int(*v)
}

// checkSelectorsVsAggregation applies MetalLB's rule that an advertisement
// limited to some Services cannot aggregate: an aggregated route would carry
// the addresses of Services it does not select.
func checkSelectorsVsAggregation(rep *reporter, s *v1beta1.BGPAdvertisementSpec) {
	if len(s.ServiceSelectors) == 0 {
		return
	}
	if s.AggregationLength != nil && *s.AggregationLength != DefaultAggregationLength {
		rep.add(specPath.Child("aggregationLength"), "cannot be combined with serviceSelectors")
	}
	if s.AggregationLengthV6 != nil && *s.AggregationLengthV6 != DefaultAggregationLengthV6 {
		rep.add(specPath.Child("aggregationLengthV6"), "cannot be combined with serviceSelectors")
	}
}

func (a *BGPAdvertisement) resolveCommunities(rep *reporter, in []string, aliases *aliasTable) {
	seen := map[string]int{}
	for i, s := range in {
		path := communitiesPath.Index(i)
		if j, dup := seen[s]; dup {
			rep.add(path, "duplicate of %s", communitiesPath.Index(j))
			continue
		}
		seen[s] = i
		v, err := aliases.resolve(s)
		if err != nil {
			rep.add(path, "%v", err)
			continue
		}
		if v.large {
			a.largeCommunities = append(a.largeCommunities, v.largeVal)
		} else {
			a.communities = append(a.communities, v.standard)
		}
	}
	// An alias and a literal may name the same value: keep it once.
	slices.Sort(a.communities)
	a.communities = slices.Compact(a.communities)
	slices.SortFunc(a.largeCommunities, LargeCommunity.compare)
	a.largeCommunities = slices.Compact(a.largeCommunities)
}

// resolvePeers checks that every listed peer exists. A listed peer that
// exists but is invalid is not an error here (its own error says why); the
// advertisement keeps naming it, so it never widens to "every peer".
func (a *BGPAdvertisement) resolvePeers(rep *reporter, in []string, peers *catalog[Peer]) {
	path := specPath.Child("peers")
	seen := map[string]int{}
	for i, name := range in {
		if j, dup := seen[name]; dup {
			rep.add(path.Index(i), "duplicate of %s", path.Index(j))
			continue
		}
		seen[name] = i
		if !peers.present[name] {
			rep.add(path.Index(i), "BGPPeer %q does not exist", name)
			continue
		}
		a.peers = append(a.peers, name)
	}
	slices.Sort(a.peers)
}

// targets are the valid peers the advertisement announces to, by name.
func (a *BGPAdvertisement) targets(peers *catalog[Peer]) []*Peer {
	var out []*Peer
	for _, name := range sortedKeys(peers.valid) {
		if a.SelectsPeer(name) {
			out = append(out, peers.valid[name])
		}
	}
	return out
}

// checkAggregationVsPools applies MetalLB's rule: the aggregation length may
// not be shorter than an address entry's own prefix, or the route would
// cover addresses outside the pool. For an entry written as a range, the
// prefix compared is the largest CIDR block of the range's decomposition,
// as in MetalLB.
func (a *BGPAdvertisement) checkAggregationVsPools(rep *reporter, env *bgpEnv) {
	for _, name := range a.pools {
		for _, r := range env.byName[name].ranges {
			length, path := a.aggregationLength, specPath.Child("aggregationLength")
			if !r.Is4() {
				length, path = a.aggregationLengthV6, specPath.Child("aggregationLengthV6")
			}
			if bits := r.shortestPrefixBits(); length < bits {
				rep.add(path, "/%d is wider than /%d, the largest CIDR block of %q in IPAddressPool %q",
					length, bits, r.String(), name)
			}
		}
	}
}

// checkLocalPrefPeers refuses a localPref for a listed eBGP peer: the
// attribute is only carried on iBGP sessions. With no peers listed the
// advertisement goes to every peer, and the localPref to the iBGP ones only
// (as in MetalLB, which drops it on eBGP sessions).
func (a *BGPAdvertisement) checkLocalPrefPeers(rep *reporter, env *bgpEnv) {
	if a.localPref == 0 || len(a.peers) == 0 {
		return
	}
	for _, p := range a.targets(env.peers) {
		if !p.IsIBGP() {
			rep.add(specPath.Child("localPref"), "BGPPeer %q is an eBGP peer; localPref is sent to iBGP peers only", p.name)
		}
	}
}

// checkEchoOverIPv6 applies MetalLB's rule that IPv6 addresses may not be
// announced to a peer whose BFD profile has echo mode on.
func (a *BGPAdvertisement) checkEchoOverIPv6(rep *reporter, env *bgpEnv) {
	i := slices.IndexFunc(a.pools, func(name string) bool { return env.byName[name].HasIPv6() })
	if i < 0 {
		return
	}
	for _, p := range a.targets(env.peers) {
		if p.bfdProfile == "" || !env.bfds.valid[p.bfdProfile].echoMode {
			continue
		}
		rep.add(specPath.Child("peers"), "announces IPv6 addresses of IPAddressPool %q to BGPPeer %q, whose BFDProfile %q has echo mode on, which BFD does not support over IPv6",
			a.pools[i], p.name, p.bfdProfile)
	}
}

// checkLocalPrefConflicts refuses an advertisement that would give one route
// (same prefix, same peer, same node) a different localPref than an earlier
// one. Advertisements with serviceSelectors are skipped, as in MetalLB: which
// Services they share is not known here.
func checkLocalPrefConflicts(rep *reporter, a *BGPAdvertisement, earlier []*BGPAdvertisement, env *bgpEnv) {
	for _, b := range earlier {
		if pool, ok := localPrefConflict(a, b, env); ok {
			rep.add(specPath.Child("localPref"), "%s conflicts with %s of BGPAdvertisement %q: both announce the addresses of IPAddressPool %q, with the same aggregation length, to the same peers from nodes both may select",
				describePref(a.localPref), describePref(b.localPref), b.name, pool)
		}
	}
}

func localPrefConflict(a, b *BGPAdvertisement, env *bgpEnv) (pool string, conflict bool) {
	if a.localPref == b.localPref || len(a.serviceSelectors) > 0 || len(b.serviceSelectors) > 0 {
		return "", false
	}
	if !peersOverlap(a.peers, b.peers) || !mayOverlap(a.nodeSelectors, b.nodeSelectors) {
		return "", false
	}
	for _, name := range a.pools {
		if !b.Covers(name) {
			continue
		}
		p := env.byName[name]
		if (p.HasIPv4() && a.aggregationLength == b.aggregationLength) ||
			(p.HasIPv6() && a.aggregationLengthV6 == b.aggregationLengthV6) {
			return name, true
		}
	}
	return "", false
}

// peersOverlap reports whether two peer lists share a peer, an empty list
// meaning every peer.
func peersOverlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	return slices.ContainsFunc(a, func(name string) bool { return slices.Contains(b, name) })
}

func describePref(p uint32) string {
	if p == 0 {
		return "no localPref"
	}
	return fmt.Sprintf("localPref %d", p)
}
