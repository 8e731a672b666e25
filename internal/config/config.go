package config

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
)

// Snapshot is every configuration object at one moment: the objects in the
// controller's namespace, in any order. Build reads it and never changes or
// keeps it.
type Snapshot struct {
	Pools             []v1beta1.IPAddressPool
	L2Advertisements  []v1beta1.L2Advertisement
	BGPAdvertisements []v1beta1.BGPAdvertisement
	Peers             []v1beta2.BGPPeer
	BFDProfiles       []v1beta1.BFDProfile
	Communities       []v1beta1.Community
	// PasswordSecrets are the Secrets BGPPeers' passwordSecret may name,
	// keyed by Secret name.
	PasswordSecrets map[string]corev1.Secret
}

// Config is the validated configuration. It is immutable and safe for
// concurrent use; every list it returns is a fresh copy, sorted by name.
type Config struct {
	pools      []*Pool
	poolByName map[string]*Pool
	byAddress  []placedRange // every pool range, sorted by start
	l2         []*L2Advertisement
	bgp        []*BGPAdvertisement
	peers      []*Peer
	peerByName map[string]*Peer
	bfds       []*BFDProfile
	bfdByName  map[string]*BFDProfile
}

type placedRange struct {
	r    AddressRange
	pool *Pool
}

// Build validates a snapshot and returns its model.
//
// The error, when not nil, is an ErrorList naming every problem found. The
// Config is never nil: it holds every object that has no error of its own,
// so the caller chooses between refusing the whole configuration (MetalLB's
// behaviour: use the Config only when the error is nil) and running with
// the valid part. In the valid part every reference resolves, except that a
// BGPAdvertisement may list a BGPPeer that is left out (nothing is announced
// to it) and an advertisement's pool names only cover pools that are in.
//
// Where two objects conflict (overlapping pools, two sessions to one
// neighbor, two localPrefs for one route, one community alias defined
// twice), the newer object, by creationTimestamp then name, carries the
// error and the older keeps working: adding an object never breaks one
// that was already in use.
func Build(s Snapshot) (*Config, error) {
	c := newCollector()

	bfds := newCatalog[BFDProfile]()
	for _, in := range prepare(c, KindBFDProfile, s.BFDProfiles) {
		bfds.present[in.Name] = true
		if b := buildBFDProfile(c.object(KindBFDProfile, in.Name), in); b != nil {
			bfds.valid[b.name] = b
		}
	}
	aliases := buildAliases(c, prepare(c, KindCommunity, s.Communities))
	pools := buildPools(c, prepare(c, KindIPAddressPool, s.Pools))
	peers := buildPeers(c, prepare(c, KindBGPPeer, s.Peers), bfds, s.PasswordSecrets)

	var l2 []*L2Advertisement
	for _, in := range prepare(c, KindL2Advertisement, s.L2Advertisements) {
		if a := buildL2Advertisement(c.object(KindL2Advertisement, in.Name), in, pools); a != nil {
			l2 = append(l2, a)
		}
	}
	env := &bgpEnv{pools: pools, byName: map[string]*Pool{}, peers: peers, bfds: bfds, aliases: aliases}
	for _, p := range pools {
		env.byName[p.name] = p
	}
	bgp := buildBGPAdvertisements(c, prepare(c, KindBGPAdvertisement, s.BGPAdvertisements), env)

	return newConfig(pools, l2, bgp, peers, bfds), c.err()
}

// buildPools validates pools (in age order) and returns the valid ones,
// sorted by name.
func buildPools(c *collector, in []*v1beta1.IPAddressPool) []*Pool {
	drafts := draftPools(c, in)
	checkOverlaps(drafts)
	var out []*Pool
	for _, d := range drafts {
		if d.rep.ok() {
			out = append(out, d.pool)
		}
	}
	slices.SortFunc(out, func(a, b *Pool) int { return cmp.Compare(a.name, b.name) })
	return out
}

// prepare refuses objects without a name or sharing one (which the API
// server prevents within a namespace, so the snapshot mixes namespaces or
// was built by hand: no copy can be trusted to be the right one), and
// returns the rest oldest first, ties by name: the order in which conflicts
// between objects are settled.
func prepare[T any, P interface {
	*T
	metav1.Object
}](c *collector, kind string, objs []T) []P {
	count := map[string]int{}
	for i := range objs {
		count[P(&objs[i]).GetName()]++
	}
	namePath := field.NewPath("metadata", "name")
	var out []P
	for i := range objs {
		o := P(&objs[i])
		switch n := o.GetName(); {
		case n == "":
			c.add(kind, n, namePath, "must not be empty")
		case count[n] > 1:
			c.add(kind, n, namePath, "%d objects have this name", count[n])
			count[n] = 0 // report once
		case count[n] == 1:
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b P) int {
		return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out
}

func newConfig(pools []*Pool, l2 []*L2Advertisement, bgp []*BGPAdvertisement, peers *catalog[Peer], bfds *catalog[BFDProfile]) *Config {
	cfg := &Config{
		pools:      pools,
		poolByName: map[string]*Pool{},
		l2:         l2,
		bgp:        bgp,
		peerByName: maps.Clone(peers.valid),
		bfdByName:  maps.Clone(bfds.valid),
	}
	for _, p := range pools {
		cfg.poolByName[p.name] = p
		for _, r := range p.ranges {
			cfg.byAddress = append(cfg.byAddress, placedRange{r: r, pool: p})
		}
	}
	slices.SortFunc(cfg.byAddress, func(a, b placedRange) int { return a.r.Range.From().Compare(b.r.Range.From()) })
	slices.SortFunc(cfg.l2, func(a, b *L2Advertisement) int { return cmp.Compare(a.name, b.name) })
	slices.SortFunc(cfg.bgp, func(a, b *BGPAdvertisement) int { return cmp.Compare(a.name, b.name) })
	for _, name := range sortedKeys(peers.valid) {
		cfg.peers = append(cfg.peers, peers.valid[name])
	}
	for _, name := range sortedKeys(bfds.valid) {
		cfg.bfds = append(cfg.bfds, bfds.valid[name])
	}
	return cfg
}

var specPath = field.NewPath("spec")

// catalog holds the valid objects of one kind by name, and the names of all
// objects of that kind, so a reference can tell "missing" from "invalid".
type catalog[T any] struct {
	valid   map[string]*T
	present map[string]bool
}

func newCatalog[T any]() *catalog[T] {
	return &catalog[T]{valid: map[string]*T{}, present: map[string]bool{}}
}

// lookup explains a broken reference with an error, or returns the object.
func (c *catalog[T]) lookup(kind, name string) (*T, error) {
	if t, ok := c.valid[name]; ok {
		return t, nil
	}
	if c.present[name] {
		return nil, fmt.Errorf("%s %q is invalid", kind, name)
	}
	return nil, fmt.Errorf("%s %q does not exist", kind, name)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Pools are the valid pools, sorted by name.
func (c *Config) Pools() []*Pool { return slices.Clone(c.pools) }

// AllPools yields the valid pools, sorted by name, without copying them:
// for callers that ask once per Service.
func (c *Config) AllPools() iter.Seq[*Pool] { return slices.Values(c.pools) }

// Pool returns the named pool.
func (c *Config) Pool(name string) (*Pool, bool) {
	p, ok := c.poolByName[name]
	return p, ok
}

// PoolFor returns the pool that contains addr, in O(log n) of the number of
// address entries. Pools never overlap, so there is at most one.
func (c *Config) PoolFor(addr netip.Addr) (*Pool, bool) {
	// The first range starting after addr; the one before it is the only
	// candidate.
	i, _ := slices.BinarySearchFunc(c.byAddress, addr, func(pr placedRange, a netip.Addr) int {
		if pr.r.Range.From().Compare(a) <= 0 {
			return -1
		}
		return 1
	})
	if i == 0 || !c.byAddress[i-1].r.Range.Contains(addr) {
		return nil, false
	}
	return c.byAddress[i-1].pool, true
}

// L2Advertisements are the valid layer-2 advertisements, sorted by name.
func (c *Config) L2Advertisements() []*L2Advertisement { return slices.Clone(c.l2) }

// L2AdvertisementsFor returns the layer-2 advertisements that announce the
// named pool, sorted by name.
func (c *Config) L2AdvertisementsFor(pool string) []*L2Advertisement {
	return filter(c.l2, func(a *L2Advertisement) bool { return a.Covers(pool) })
}

// BGPAdvertisements are the valid BGP advertisements, sorted by name.
func (c *Config) BGPAdvertisements() []*BGPAdvertisement { return slices.Clone(c.bgp) }

// BGPAdvertisementsFor returns the BGP advertisements that announce the
// named pool, sorted by name.
func (c *Config) BGPAdvertisementsFor(pool string) []*BGPAdvertisement {
	return filter(c.bgp, func(a *BGPAdvertisement) bool { return a.Covers(pool) })
}

// Peers are the valid BGP peers, sorted by name.
func (c *Config) Peers() []*Peer { return slices.Clone(c.peers) }

// Peer returns the named peer.
func (c *Config) Peer(name string) (*Peer, bool) {
	p, ok := c.peerByName[name]
	return p, ok
}

// BFDProfiles are the valid BFD profiles, sorted by name.
func (c *Config) BFDProfiles() []*BFDProfile { return slices.Clone(c.bfds) }

// BFDProfile returns the named BFD profile.
func (c *Config) BFDProfile(name string) (*BFDProfile, bool) {
	b, ok := c.bfdByName[name]
	return b, ok
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, t := range in {
		if keep(t) {
			out = append(out, t)
		}
	}
	return out
}
