package config

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// names lists what a Config holds, kind by kind.
func names(cfg *Config) map[string][]string {
	out := map[string][]string{}
	for _, p := range cfg.Pools() {
		out["pools"] = append(out["pools"], p.Name())
	}
	for _, a := range cfg.L2Advertisements() {
		out["l2"] = append(out["l2"], a.Name())
	}
	for _, a := range cfg.BGPAdvertisements() {
		out["bgp"] = append(out["bgp"], a.Name())
	}
	for _, p := range cfg.Peers() {
		out["peers"] = append(out["peers"], p.Name())
	}
	for _, b := range cfg.BFDProfiles() {
		out["bfd"] = append(out["bfd"], b.Name())
	}
	return out
}

// mixed is a snapshot with some broken objects of every kind.
func mixed() Snapshot {
	return snap(
		pool("gold", addresses("192.0.2.0/25"), labelled[v1beta1.IPAddressPool]("tier", "gold")),
		pool("silver", addresses("192.0.2.128/25")),
		pool("lead", addresses("192.0.2.300/32")),
		pool("fools-gold", addresses("192.0.2.64/26"), created[v1beta1.IPAddressPool](5)),
		l2("everywhere"),
		l2("broken", l2Spec(func(s *v1beta1.L2AdvertisementSpec) { s.Interfaces = []string{""} })),
		peer("router", ibgp(), bfdProfileRef("fast")),
		peer("lost", peerAddress("198.51.100.2"), bfdProfileRef("slow")),
		bfd("fast"),
		bfd("silly", bfdSpec(func(s *v1beta1.BFDProfileSpec) { s.DetectMultiplier = ptr(uint32(0)) })),
		bgpAdv("to-router", advPeers("router"), localPref(100)),
		bgpAdv("to-lost", advPeers("lost")),
		bgpAdv("to-nobody", advPeers("nobody")),
		community("c", "gold", "65000:100"),
	)
}

func TestBuildPartial(t *testing.T) {
	cfg, err := Build(mixed())
	want := []string{
		`IPAddressPool "fools-gold": spec.addresses[0]: "192.0.2.64/26" overlaps "192.0.2.0/25" of IPAddressPool "gold"`,
		`IPAddressPool "lead": spec.addresses[0]: invalid CIDR "192.0.2.300/32": "192.0.2.300" is not an IP address`,
		`L2Advertisement "broken": spec.interfaces[0]: must not be empty`,
		`BGPAdvertisement "to-nobody": spec.peers[0]: BGPPeer "nobody" does not exist`,
		`BGPPeer "lost": spec.bfdProfile: BFDProfile "slow" does not exist`,
		`BFDProfile "silly": spec.detectMultiplier: 0 is out of range 2-255`,
	}
	if diff := cmp.Diff(want, errorLines(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	wantModel := map[string][]string{
		"pools": {"gold", "silver"},
		"l2":    {"everywhere"},
		"bgp":   {"to-lost", "to-router"},
		"peers": {"router"},
		"bfd":   {"fast"},
	}
	if diff := cmp.Diff(wantModel, names(cfg)); diff != "" {
		t.Errorf("model (-want +got):\n%s", diff)
	}
	// An advertisement listing a peer that was left out keeps listing it:
	// it must never widen to every peer.
	toLost := cfg.BGPAdvertisements()[0]
	if toLost.SelectsPeer("router") {
		t.Error(`"to-lost" selects "router"; it must only select "lost"`)
	}
	if gold, lead := len(cfg.L2AdvertisementsFor("gold")), len(cfg.L2AdvertisementsFor("lead")); gold != 1 || lead != 0 {
		t.Errorf("L2AdvertisementsFor: gold %d, lead %d; want 1, 0", gold, lead)
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	base := mixed()
	wantCfg, wantErr := Build(base)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		s := mixed()
		rng.Shuffle(len(s.Pools), func(i, j int) { s.Pools[i], s.Pools[j] = s.Pools[j], s.Pools[i] })
		rng.Shuffle(len(s.Peers), func(i, j int) { s.Peers[i], s.Peers[j] = s.Peers[j], s.Peers[i] })
		rng.Shuffle(len(s.BGPAdvertisements), func(i, j int) {
			s.BGPAdvertisements[i], s.BGPAdvertisements[j] = s.BGPAdvertisements[j], s.BGPAdvertisements[i]
		})
		rng.Shuffle(len(s.BFDProfiles), func(i, j int) { s.BFDProfiles[i], s.BFDProfiles[j] = s.BFDProfiles[j], s.BFDProfiles[i] })
		rng.Shuffle(len(s.L2Advertisements), func(i, j int) {
			s.L2Advertisements[i], s.L2Advertisements[j] = s.L2Advertisements[j], s.L2Advertisements[i]
		})
		cfg, err := Build(s)
		if diff := cmp.Diff(errorLines(t, wantErr), errorLines(t, err)); diff != "" {
			t.Fatalf("shuffle %d: errors differ (-first +this):\n%s", i, diff)
		}
		if diff := cmp.Diff(names(wantCfg), names(cfg)); diff != "" {
			t.Fatalf("shuffle %d: model differs (-first +this):\n%s", i, diff)
		}
	}
}

func TestObjectNames(t *testing.T) {
	runRules(t, []ruleCase{
		{
			name: "two pools with one name: neither is used",
			snap: snap(pool("gold"), pool("gold", addresses("198.51.100.0/24")), pool("silver", addresses("203.0.113.0/24"))),
			want: []string{`IPAddressPool "gold": metadata.name: 2 objects have this name`},
		},
		{
			name: "no name",
			snap: snap(peer(""), bfd("")),
			want: []string{
				`BGPPeer "": metadata.name: must not be empty`,
				`BFDProfile "": metadata.name: must not be empty`,
			},
		},
	})
}

func TestPoolFor(t *testing.T) {
	cfg := mustBuild(t, snap(
		pool("a", addresses("192.0.2.0/26", "2001:db8::/120")),
		pool("b", addresses("192.0.2.64-192.0.2.70", "198.51.100.0/24")),
		pool("c", addresses("10.0.0.1-10.0.0.1")),
	))
	for addr, want := range map[string]string{
		"192.0.2.0": "a", "192.0.2.63": "a", "192.0.2.64": "b", "192.0.2.70": "b", "192.0.2.71": "",
		"198.51.100.255": "b", "10.0.0.1": "c", "10.0.0.2": "", "0.0.0.0": "",
		"2001:db8::ff": "a", "2001:db8::100": "", "::": "", "::ffff:192.0.2.1": "",
	} {
		p, ok := cfg.PoolFor(netip.MustParseAddr(addr))
		got := ""
		if ok {
			got = p.Name()
		}
		if got != want {
			t.Errorf("PoolFor(%s) = %q, want %q", addr, got, want)
		}
	}
	if _, ok := cfg.PoolFor(netip.Addr{}); ok {
		t.Error("PoolFor(zero Addr) found a pool")
	}
	if _, ok := (&Config{}).PoolFor(netip.MustParseAddr("192.0.2.1")); ok {
		t.Error("empty Config found a pool")
	}
}

func TestErrorList(t *testing.T) {
	_, err := Build(snap(pool("gold", addresses()), peer("p", peerAddress("x"))))
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("errors.As(*FieldError) failed on %v", err)
	}
	want := &FieldError{Kind: KindIPAddressPool, Name: "gold", Field: "spec.addresses", Detail: "must list at least one CIDR or range"}
	if diff := cmp.Diff(want, fe); diff != "" {
		t.Errorf("first FieldError (-want +got):\n%s", diff)
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatal("errors.As(ErrorList) failed")
	}
	if !list.Has(KindBGPPeer, "p") || list.Has(KindBGPPeer, "gold") {
		t.Errorf("Has: wrong answer for %v", list)
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 2 {
		t.Errorf("Error() has %d lines, want one per problem:\n%s", len(lines), err)
	}
}

func TestBuildLeavesSnapshotAlone(t *testing.T) {
	s := mixed()
	s.Pools[0].Spec.ServiceAllocation = &v1beta1.ServiceAllocation{Namespaces: []string{"z", "a"}}
	before := snapshotCopy(s)
	cfg, _ := Build(s)
	if diff := cmp.Diff(before, s); diff != "" {
		t.Errorf("Build changed its input (-before +after):\n%s", diff)
	}
	// Nor can a caller change the Config through what it returns.
	pools := cfg.Pools()
	pools[0] = nil
	gold, _ := cfg.Pool("gold")
	gold.Ranges()[0] = AddressRange{}
	gold.Labels()["x"] = "y"
	if cfg.Pools()[0] == nil || gold.Ranges()[0] == (AddressRange{}) || gold.Labels()["x"] == "y" {
		t.Error("Config changed through a returned value")
	}
}

func snapshotCopy(s Snapshot) Snapshot {
	c := Snapshot{PasswordSecrets: s.PasswordSecrets}
	for i := range s.Pools {
		c.Pools = append(c.Pools, *s.Pools[i].DeepCopy())
	}
	for i := range s.L2Advertisements {
		c.L2Advertisements = append(c.L2Advertisements, *s.L2Advertisements[i].DeepCopy())
	}
	for i := range s.BGPAdvertisements {
		c.BGPAdvertisements = append(c.BGPAdvertisements, *s.BGPAdvertisements[i].DeepCopy())
	}
	for i := range s.Peers {
		c.Peers = append(c.Peers, *s.Peers[i].DeepCopy())
	}
	for i := range s.BFDProfiles {
		c.BFDProfiles = append(c.BFDProfiles, *s.BFDProfiles[i].DeepCopy())
	}
	for i := range s.Communities {
		c.Communities = append(c.Communities, *s.Communities[i].DeepCopy())
	}
	return c
}
