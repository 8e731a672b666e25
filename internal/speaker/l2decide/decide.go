package l2decide

import (
	"cmp"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/election"
	"github.com/steadylb/steadylb/internal/speaker/facts"
)

// Input is everything the decision for one address reads.
type Input struct {
	Addr netip.Addr
	// Pool contains Addr; nil when no pool does.
	Pool *config.Pool
	// Services show Addr in their status, sorted by key.
	Services []*facts.Service
	// Live are the live members, sorted.
	Live []string
	// Nodes holds the Nodes of the live members; a member whose Node
	// object does not exist is missing and cannot announce.
	Nodes map[string]facts.Node
}

// Why says why an address is not announced by anyone.
type Why string

const (
	Announced Why = ""
	// NoConfiguration is the caller's: there is no valid configuration
	// to decide with yet.
	NoConfiguration   Why = "NoConfiguration"
	NotInAnyPool      Why = "NotInAnyPool"
	NoAdvertisement   Why = "NoAdvertisement"
	NoServingEndpoint Why = "NoServingEndpoint"
	NoCandidate       Why = "NoCandidate"
)

// Decision is who answers for one address, and for which Services.
type Decision struct {
	// Owner answers for the address; empty when nobody does (see Reason).
	Owner  string
	Reason Why
	// Services are the Services the address is announced for: those an
	// advertisement selects that have a serving endpoint, sorted.
	Services []types.NamespacedName
	// Interfaces the owner may answer on; nil means every suitable one.
	Interfaces []string
}

// Elect picks the node that answers for an address among candidates, the
// same one whatever their order, or reports there is none.
// election.Owner is the speaker's; Decide takes it as a parameter so
// that its tests can elect alphabetically and read plainly.
type Elect func(netip.Addr, []election.Candidate) (string, bool)

// Decide elects the node that answers for one address.
//
// Services sharing an address must elect the same node, so the election
// is per address over one candidate set: the INTERSECTION of the
// candidates of every announced Service on it. The elected node receives
// the traffic of all of them, and only a node in the intersection can
// deliver each one (an advertisement selects it for each Service, and
// each Local Service has an endpoint there). A union would elect nodes
// that drop some Services' traffic; with sharing, Local Services have the
// same selector (MetalLB's sharing rule), so their endpoints agree and the
// intersection is empty only while they disagree. Services without a
// serving endpoint or without an advertisement are not announced and do
// not narrow the set.
//
// A node's weight is the summed preferredNodeSelectors weight of the
// advertisements (of the announced Services) that select it; its
// interfaces are the union of theirs, or all when one of them lists none.
//
// O(services × live members × advertisements).
func Decide(in Input, cfg *config.Config, elect Elect) Decision {
	if in.Pool == nil {
		return Decision{Reason: NotInAnyPool}
	}
	poolAds := cfg.L2AdvertisementsFor(in.Pool.Name())
	var (
		d          Decision
		candidates map[string]bool // nil until the first announced Service
		used       = map[string]*config.L2Advertisement{}
		sawAds     bool
	)
	for _, svc := range in.Services {
		ads := selectingService(poolAds, svc)
		if len(ads) == 0 {
			continue
		}
		sawAds = true
		if !svc.Endpoints.Serving {
			continue
		}
		d.Services = append(d.Services, svc.Key)
		for _, a := range ads {
			used[a.Name()] = a
		}
		eligible := map[string]bool{}
		for _, n := range in.Live {
			node, ok := in.Nodes[n]
			if ok && node.Usable() && svc.MayServe(n) && anySelectsNode(ads, node) {
				eligible[n] = true
			}
		}
		candidates = intersect(candidates, eligible)
	}
	switch {
	case len(d.Services) == 0 && sawAds:
		return Decision{Reason: NoServingEndpoint}
	case len(d.Services) == 0:
		return Decision{Reason: NoAdvertisement}
	case len(candidates) == 0:
		d.Reason = NoCandidate
		return d
	}
	ads := sortedAds(used)
	var list []election.Candidate
	for _, n := range in.Live {
		if candidates[n] {
			list = append(list, election.Candidate{Node: n, Weight: weight(ads, in.Nodes[n])})
		}
	}
	owner, ok := elect(in.Addr, list)
	if !ok {
		d.Reason = NoCandidate
		return d
	}
	d.Owner = owner
	d.Interfaces = interfacesOn(ads, in.Nodes[owner])
	return d
}

func selectingService(ads []*config.L2Advertisement, svc *facts.Service) []*config.L2Advertisement {
	var out []*config.L2Advertisement
	for _, a := range ads {
		if a.SelectsService(svc.Labels) {
			out = append(out, a)
		}
	}
	return out
}

func anySelectsNode(ads []*config.L2Advertisement, node facts.Node) bool {
	return slices.ContainsFunc(ads, func(a *config.L2Advertisement) bool { return a.SelectsNode(node.Labels) })
}

// intersect narrows acc to set; a nil acc stands for everything.
func intersect(acc, set map[string]bool) map[string]bool {
	if acc == nil {
		return set
	}
	out := map[string]bool{}
	for n := range acc {
		if set[n] {
			out[n] = true
		}
	}
	return out
}

func sortedAds(m map[string]*config.L2Advertisement) []*config.L2Advertisement {
	out := make([]*config.L2Advertisement, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *config.L2Advertisement) int { return cmp.Compare(a.Name(), b.Name()) })
	return out
}

// weight sums the preferredNodeSelectors weights of the advertisements
// that select the node.
func weight(ads []*config.L2Advertisement, node facts.Node) int {
	total := 0
	for _, a := range ads {
		if a.SelectsNode(node.Labels) {
			total += a.NodeWeight(node.Labels)
		}
	}
	return total
}

// interfacesOn returns the interfaces the node may answer on: the union of
// those listed by the advertisements that select it, or nil (all) when
// one of them lists none.
func interfacesOn(ads []*config.L2Advertisement, node facts.Node) []string {
	var out []string
	for _, a := range ads {
		if !a.SelectsNode(node.Labels) {
			continue
		}
		names := a.Interfaces()
		if len(names) == 0 {
			return nil
		}
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
