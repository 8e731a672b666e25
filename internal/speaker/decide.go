package speaker

import (
	"cmp"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/facts"
)

// addressInput is everything the layer-2 decision for one address reads.
type addressInput struct {
	addr netip.Addr
	// pool contains addr; nil when no pool does.
	pool *config.Pool
	// services show addr in their status, sorted by key.
	services []*facts.Service
	// live are the live members, sorted.
	live []string
	// nodes holds the Nodes of the live members; a member whose Node
	// object does not exist is missing and cannot announce.
	nodes map[string]facts.Node
}

// why says why an address is not announced by anyone.
type why string

const (
	announced         why = ""
	noConfiguration   why = "NoConfiguration"
	notInAnyPool      why = "NotInAnyPool"
	noAdvertisement   why = "NoAdvertisement"
	noServingEndpoint why = "NoServingEndpoint"
	noCandidate       why = "NoCandidate"
)

// addressDecision is who answers for one address, and for which Services.
type addressDecision struct {
	// owner answers for the address; empty when nobody does (see reason).
	owner  string
	reason why
	// services are the Services the address is announced for: those an
	// advertisement selects that have a serving endpoint, sorted.
	services []types.NamespacedName
	// interfaces the owner may answer on; nil means every suitable one.
	interfaces []string
}

// decideAddress elects the node that answers for one address.
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
func decideAddress(in addressInput, cfg *config.Config, elect func(netip.Addr, []Candidate) (string, bool)) addressDecision {
	if in.pool == nil {
		return addressDecision{reason: notInAnyPool}
	}
	poolAds := cfg.L2AdvertisementsFor(in.pool.Name())
	var (
		d          addressDecision
		candidates map[string]bool // nil until the first announced Service
		used       = map[string]*config.L2Advertisement{}
		sawAds     bool
	)
	for _, svc := range in.services {
		ads := selectingService(poolAds, svc)
		if len(ads) == 0 {
			continue
		}
		sawAds = true
		if !svc.Endpoints.Serving {
			continue
		}
		d.services = append(d.services, svc.Key)
		for _, a := range ads {
			used[a.Name()] = a
		}
		eligible := map[string]bool{}
		for _, n := range in.live {
			node, ok := in.nodes[n]
			if ok && node.Usable() && svc.MayServe(n) && anySelectsNode(ads, node) {
				eligible[n] = true
			}
		}
		candidates = intersect(candidates, eligible)
	}
	switch {
	case len(d.services) == 0 && sawAds:
		return addressDecision{reason: noServingEndpoint}
	case len(d.services) == 0:
		return addressDecision{reason: noAdvertisement}
	case len(candidates) == 0:
		d.reason = noCandidate
		return d
	}
	ads := sortedAds(used)
	var list []Candidate
	for _, n := range in.live {
		if candidates[n] {
			list = append(list, Candidate{Node: n, Weight: weight(ads, in.nodes[n])})
		}
	}
	owner, ok := elect(in.addr, list)
	if !ok {
		d.reason = noCandidate
		return d
	}
	d.owner = owner
	d.interfaces = interfacesOn(ads, in.nodes[owner])
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
