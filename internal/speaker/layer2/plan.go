package layer2

import (
	"net/netip"
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

// makePlan decides which responders answer for which addresses. An address
// with no interface list goes to every usable link; a listed interface
// that exists but is not usable (down, enslaved, loopback, no Ethernet
// address) answers nothing and is not missing either, so the status shows
// it as not answering rather than as a typo. Cost: O(addresses × links).
func makePlan(want map[netip.Addr][]string, links []Link) plan {
	p := plan{links: make(map[string]Link, len(links)), assign: map[responderKey][]netip.Addr{}}
	var usable []string
	for _, l := range links {
		p.links[l.Name] = l
		if l.Usable() {
			usable = append(usable, l.Name)
		}
	}
	missing := map[string]struct{}{}
	for addr, names := range want {
		proto := protocolOf(addr)
		if len(names) == 0 {
			for _, name := range usable {
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
			case l.Usable():
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
