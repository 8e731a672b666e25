package bgpdecide

import (
	"net/netip"
	"slices"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/routes"
)

// Model is the BGP configuration as this node sees it: the sessions it
// runs (the valid BGPPeers whose nodeSelectors select it) and, per pool,
// the BGPAdvertisements that select this node, each with the sessions it
// goes to and the attributes it gives them. It is rebuilt when the
// configuration or this node's labels change, which revisits every
// Service anyway; in between, one Service's decision reads it without
// walking the configuration.
type Model struct {
	Sessions []bgp.Session // sorted by name
	Names    []string      // the sessions' names, sorted
	byPool   map[string][]*bgpAd
}

// bgpAd is one BGPAdvertisement selecting this node.
type bgpAd struct {
	ad      *config.BGPAdvertisement
	targets []bgpTarget
}

// bgpTarget is one session an advertisement goes to, with the attributes
// it gives routes there (localPref only on iBGP).
type bgpTarget struct {
	session string
	attrs   *routes.Attrs
}

// NewModel builds the model for this node; self nil (its Node is not
// known) runs no session, since no nodeSelector can be judged.
func NewModel(cfg *config.Config, self *facts.Node) *Model {
	m := &Model{byPool: map[string][]*bgpAd{}}
	if cfg == nil || self == nil {
		return m
	}
	peers := map[string]*config.Peer{}
	for _, p := range cfg.Peers() {
		if !p.SelectsNode(self.Labels) {
			continue
		}
		peers[p.Name()] = p
		m.Sessions = append(m.Sessions, sessionOf(p, cfg))
		m.Names = append(m.Names, p.Name())
	}
	for _, ad := range cfg.BGPAdvertisements() {
		if !ad.SelectsNode(self.Labels) {
			continue
		}
		b := &bgpAd{ad: ad}
		ibgp, ebgp := attrsOf(ad, true), attrsOf(ad, false)
		for _, name := range m.Names {
			if !ad.SelectsPeer(name) {
				continue
			}
			t := bgpTarget{session: name, attrs: ebgp}
			if peers[name].IsIBGP() {
				t.attrs = ibgp
			}
			b.targets = append(b.targets, t)
		}
		for _, pool := range ad.Pools() {
			m.byPool[pool] = append(m.byPool[pool], b)
		}
	}
	return m
}

func attrsOf(ad *config.BGPAdvertisement, ibgp bool) *routes.Attrs {
	a := &routes.Attrs{Communities: ad.Communities(), LargeCommunities: ad.LargeCommunities()}
	if pref, ok := ad.LocalPref(); ok && ibgp {
		a.LocalPref = pref
	}
	return a
}

// Without drops sessions the Router refused, and the routes to them.
func (m *Model) Without(refused map[string]bool) {
	if len(refused) == 0 {
		return
	}
	m.Sessions = slices.DeleteFunc(m.Sessions, func(s bgp.Session) bool { return refused[s.Name] })
	m.Names = slices.DeleteFunc(m.Names, func(n string) bool { return refused[n] })
	for _, ads := range m.byPool {
		for _, b := range ads {
			b.targets = slices.DeleteFunc(b.targets, func(t bgpTarget) bool { return refused[t.session] })
		}
	}
}

// sessionOf resolves a valid peer to the Session the Router runs. Its BFD
// profile exists in cfg (config guarantees it).
func sessionOf(p *config.Peer, cfg *config.Config) bgp.Session {
	s := bgp.Session{
		Name: p.Name(), MyASN: p.MyASN(), LocalASN: p.LocalASN(), PeerASN: p.PeerASN(), DynamicASN: p.DynamicASN(),
		Address: p.Address(), Interface: p.Interface(), Port: p.Port(), Source: p.SourceAddress(), VRF: p.VRF(), RouterID: p.RouterID(),
		HoldTime: p.HoldTime(), KeepaliveTime: p.KeepaliveTime(), ConnectTime: p.ConnectTime(),
		Password: p.Password(), EBGPMultiHop: p.EBGPMultiHop(), GracefulRestart: p.EnableGracefulRestart(),
		DualStack: p.DualStackAddressFamily(),
	}
	if name := p.BFDProfile(); name != "" {
		if b, ok := cfg.BFDProfile(name); ok {
			s.BFD = &bfd.Profile{
				ReceiveInterval: b.ReceiveInterval(), TransmitInterval: b.TransmitInterval(),
				DetectMultiplier: uint8(b.DetectMultiplier()), EchoMode: b.EchoMode(), EchoInterval: b.EchoInterval(),
				PassiveMode: b.PassiveMode(), MinimumTTL: uint8(b.MinimumTTL()),
			}
		}
	}
	return s
}

// SameSessions reports whether two session lists (sorted by name) are
// equal, settings included.
func SameSessions(a, b []bgp.Session) bool {
	return slices.EqualFunc(a, b, bgp.Session.Equal)
}

// Why says why a Service is not advertised from this node.
type Why string

const (
	Advertised        Why = ""
	NoNode            Why = "NodeUnknown"
	NodeExcluded      Why = "NodeExcluded"
	NoServingEndpoint Why = "NoServingEndpoint"
	NoLocalEndpoint   Why = "NoLocalEndpoint"
	NoAdvertisement   Why = "NoAdvertisement"
)

// Decision is what this node advertises for one Service.
type Decision struct {
	Entries []routes.Entry
	// Addrs are the Service's addresses with at least one route, sorted.
	Addrs  []netip.Addr
	Reason Why
}

// Decide computes this node's routes for one Service: for each of its
// addresses in a pool, each advertisement of that pool that selects this
// node and the Service contributes the address aggregated to its length,
// to each of its sessions. There is no election: every eligible node
// advertises. Under Cluster policy a Service needs a serving endpoint
// anywhere; under Local, one on this node (MetalLB's rule). O(addresses
// × advertisements of their pools × sessions).
func Decide(svc *facts.Service, addrs []netip.Addr, cfg *config.Config, m *Model, self *facts.Node) Decision {
	switch {
	case svc == nil || len(addrs) == 0 || cfg == nil:
		return Decision{Reason: NoAdvertisement}
	case self == nil:
		return Decision{Reason: NoNode}
	case !self.Usable():
		return Decision{Reason: NodeExcluded}
	case !svc.Endpoints.Serving:
		return Decision{Reason: NoServingEndpoint}
	case !svc.MayServe(self.Name):
		return Decision{Reason: NoLocalEndpoint}
	}
	var d Decision
	for _, a := range addrs {
		pool, ok := cfg.PoolFor(a)
		if !ok {
			continue
		}
		found := false
		for _, b := range m.byPool[pool.Name()] {
			if !b.ad.SelectsService(svc.Labels) {
				continue
			}
			prefix := aggregate(a, b.ad)
			for _, t := range b.targets {
				d.Entries = append(d.Entries, routes.Entry{Key: routes.Key{Session: t.session, Prefix: prefix}, Attrs: t.attrs})
				found = true
			}
		}
		if found {
			d.Addrs = append(d.Addrs, a)
		}
	}
	if len(d.Entries) == 0 {
		d.Reason = NoAdvertisement
	}
	return d
}

// aggregate is the prefix an advertisement announces an address with.
func aggregate(a netip.Addr, ad *config.BGPAdvertisement) netip.Prefix {
	bits := ad.AggregationLength()
	if a.Is6() {
		bits = ad.AggregationLengthV6()
	}
	p, err := a.Prefix(bits)
	if err != nil {
		// config bounds the lengths by the family's size.
		return netip.PrefixFrom(a, a.BitLen())
	}
	return p
}
