package layer2

import (
	"net/netip"
	"regexp"
	"slices"
)

// responderKey names a responder: one per interface and protocol.
type responderKey struct {
	link  string
	proto Protocol
}

// plan is where each address should be answered, given the links there are.
type plan struct {
	links   map[string]Link
	assign  map[responderKey][]netip.Addr // each sorted
	missing []string                      // sorted, distinct
}

// selection is what picks the interfaces of an address that lists none,
// and the interfaces that never answer.
type selection struct {
	// node are this node's own addresses (Options.NodeAddresses).
	node []netip.Addr
	// exclude: interfaces whose name matches one never answer
	// (SetExcluded).
	exclude []*regexp.Regexp
}

// excluded reports whether the operator excluded the interface name.
func (s selection) excluded(name string) bool {
	for _, re := range s.exclude {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// lan picks the interfaces that face the LAN of addr, among those that
// may answer: the ones on addr's subnet, else the ones carrying this
// node's own address. A host asking for addr sends its request where it
// would send its packets, so an interface on addr's subnet is where the
// askers are; when addr is in none of the node's subnets (a pool apart
// from the node network), the askers reach it where they reach the node.
// Pod veths, CNI and container bridges, tunnels and kube-proxy's or
// NodeLocal DNS's dummy devices are on neither (their subnets are the
// pods' or none), so a node starting pods never answers on them, whatever
// they are called.
func (s selection) lan(addr netip.Addr, eligible []Link) []string {
	var out []string
	for _, l := range eligible {
		if l.OnSubnetOf(addr) {
			out = append(out, l.Name)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, l := range eligible {
		if l.Carries(s.node) {
			out = append(out, l.Name)
		}
	}
	return out
}

// makePlan decides which responders answer for which addresses. An address
// with no interface list goes to the interfaces facing its LAN
// (selection.lan); a listed interface that exists but is not usable (down,
// enslaved, loopback, no Ethernet address) or is excluded answers nothing
// and is not missing either, so the status shows it as not answering
// rather than as a typo. Cost: O(addresses × links × subnets per link).
func makePlan(want map[netip.Addr][]string, links []Link, sel selection) plan {
	p := plan{links: make(map[string]Link, len(links)), assign: map[responderKey][]netip.Addr{}}
	var eligible []Link
	for _, l := range links {
		p.links[l.Name] = l
		if l.Usable() && !sel.excluded(l.Name) {
			eligible = append(eligible, l)
		}
	}
	missing := map[string]struct{}{}
	for addr, names := range want {
		proto := protocolOf(addr)
		if len(names) == 0 {
			for _, name := range sel.lan(addr, eligible) {
				key := responderKey{name, proto}
				p.assign[key] = append(p.assign[key], addr)
			}
			continue
		}
		for _, name := range names {
			l, ok := p.links[name]
			switch {
			case !ok:
				missing[name] = struct{}{}
			case l.Usable() && !sel.excluded(name):
				key := responderKey{name, proto}
				p.assign[key] = append(p.assign[key], addr)
			}
		}
	}
	// A name listed twice for one address is one assignment.
	for key := range p.assign {
		slices.SortFunc(p.assign[key], netip.Addr.Compare)
		p.assign[key] = slices.Compact(p.assign[key])
	}
	for name := range missing {
		p.missing = append(p.missing, name)
	}
	slices.Sort(p.missing)
	return p
}

// keys returns the plan's responders in a fixed order, so opening them
// and logging about them is deterministic.
func (p plan) keys() []responderKey {
	keys := make([]responderKey, 0, len(p.assign))
	for k := range p.assign {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b responderKey) int {
		if a.link != b.link {
			if a.link < b.link {
				return -1
			}
			return 1
		}
		return int(a.proto - b.proto)
	})
	return keys
}
