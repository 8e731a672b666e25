package election

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func nodes(names ...string) []Candidate {
	cs := make([]Candidate, len(names))
	for i, n := range names {
		cs[i] = Candidate{Node: n}
	}
	return cs
}

// digestOrder is the reference for equal weights, written the plain way:
// sort names by sha256(name + "#" + address text).
func digestOrder(addr string, names []string) []string {
	sorted := slices.Clone(names)
	slices.SortFunc(sorted, func(a, b string) int {
		ha := sha256.Sum256([]byte(a + "#" + addr))
		hb := sha256.Sum256([]byte(b + "#" + addr))
		return bytes.Compare(ha[:], hb[:])
	})
	return sorted
}

func TestOwner(t *testing.T) {
	v4 := netip.MustParseAddr("198.51.100.10")
	v6 := netip.MustParseAddr("2001:db8::10")
	three := []string{"node-a", "node-b", "node-c"}
	tests := []struct {
		name       string
		addr       netip.Addr
		candidates []Candidate
		want       string
		wantOK     bool
	}{
		{name: "no candidates", addr: v4, candidates: nil, wantOK: false},
		{name: "only empty names", addr: v4, candidates: nodes("", ""), wantOK: false},
		{name: "single", addr: v4, candidates: nodes("node-a"), want: "node-a", wantOK: true},
		{name: "equal weights: lowest digest (v4)", addr: v4, candidates: nodes(three...),
			want: digestOrder("198.51.100.10", three)[0], wantOK: true},
		{name: "equal weights: lowest digest (v6)", addr: v6, candidates: nodes(three...),
			want: digestOrder("2001:db8::10", three)[0], wantOK: true},
		{name: "weight beats digest", addr: v4,
			candidates: []Candidate{{Node: "node-a"}, {Node: "node-b"}, {Node: "node-c", Weight: 1}},
			want:       "node-c", wantOK: true},
		{name: "highest of several weights", addr: v4,
			candidates: []Candidate{{Node: "node-a", Weight: 50}, {Node: "node-b", Weight: 100}, {Node: "node-c", Weight: 80}},
			want:       "node-b", wantOK: true},
		{name: "negative weights still compare", addr: v4,
			candidates: []Candidate{{Node: "node-a", Weight: -5}, {Node: "node-b", Weight: -1}},
			want:       "node-b", wantOK: true},
		{name: "duplicate keeps its highest weight", addr: v4,
			candidates: []Candidate{{Node: "node-a", Weight: 10}, {Node: "node-b", Weight: 20}, {Node: "node-a", Weight: 30}},
			want:       "node-a", wantOK: true},
		{name: "empty name ignored beside real ones", addr: v4,
			candidates: []Candidate{{Node: "", Weight: 1000}, {Node: "node-a"}},
			want:       "node-a", wantOK: true},
		{name: "IPv4-mapped elects like IPv4", addr: netip.MustParseAddr("::ffff:198.51.100.10"),
			candidates: nodes(three...), want: digestOrder("198.51.100.10", three)[0], wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Owner(tt.addr, tt.candidates)
			if diff := cmp.Diff(tt.wantOK, ok); diff != "" {
				t.Fatalf("ok (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("owner (-want +got):\n%s", diff)
			}
		})
	}
}

// randomCandidates builds n candidates with weights from a small range, so
// that ties on weight are common and the digest matters.
func randomCandidates(r *rand.Rand, n int) []Candidate {
	cs := make([]Candidate, n)
	for i := range cs {
		cs[i] = Candidate{Node: fmt.Sprintf("worker-%03d", r.IntN(3*n)), Weight: r.IntN(3)}
	}
	return cs
}

func randomAddr(r *rand.Rand) netip.Addr {
	if r.IntN(2) == 0 {
		return netip.AddrFrom4([4]byte{198, 51, 100, byte(r.IntN(256))})
	}
	var b [16]byte
	b[0], b[1], b[2], b[3] = 0x20, 0x01, 0x0d, 0xb8
	for i := 8; i < 16; i++ {
		b[i] = byte(r.IntN(256))
	}
	return netip.AddrFrom16(b)
}

// TestOrderAndDuplicatesDoNotMatter: shuffling the candidates or repeating
// some of them never changes the owner.
func TestOrderAndDuplicatesDoNotMatter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		addr := randomAddr(r)
		cs := randomCandidates(r, 1+r.IntN(12))
		wantOwner, _ := Owner(addr, cs)
		for range 5 {
			mixed := slices.Clone(cs)
			for range r.IntN(3) {
				mixed = append(mixed, cs[r.IntN(len(cs))]) // exact duplicate
			}
			r.Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
			if got, _ := Owner(addr, mixed); got != wantOwner {
				t.Fatalf("trial %d: owner of %v changed from %q to %q after shuffle/duplicates", trial, addr, wantOwner, got)
			}
		}
	}
}

// TestEqualWeightsMatchDigestOrder: with equal weights the owner is the
// node with the lowest sha256(node#address), for every address.
func TestEqualWeightsMatchDigestOrder(t *testing.T) {
	names := []string{"kind-worker", "kind-worker2", "kind-worker3", "kind-control-plane"}
	for i := range 256 {
		addr := netip.AddrFrom4([4]byte{203, 0, 113, byte(i)})
		got, _ := Owner(addr, nodes(names...))
		if want := digestOrder(addr.String(), names)[0]; got != want {
			t.Fatalf("%v: owner %q, reference %q", addr, got, want)
		}
	}
}

// TestRemovingANodeMovesOnlyItsAddresses: when a node goes, only the
// addresses it owned change owner.
func TestRemovingANodeMovesOnlyItsAddresses(t *testing.T) {
	all := nodes("a", "b", "c", "d", "e")
	withoutC := nodes("a", "b", "d", "e")
	for i := range 1000 {
		addr := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
		before, _ := Owner(addr, all)
		after, _ := Owner(addr, withoutC)
		if before != "c" && before != after {
			t.Fatalf("%v moved from %q to %q though %q stayed", addr, before, after, before)
		}
	}
}

// TestDistributionIsBalanced: 3,000 addresses over 3 nodes land roughly a
// third on each. The hash is fixed, so this is deterministic.
func TestDistributionIsBalanced(t *testing.T) {
	cs := nodes("node-1", "node-2", "node-3")
	counts := map[string]int{}
	const total = 3000
	for i := range total {
		var addr netip.Addr
		if i%2 == 0 {
			addr = netip.AddrFrom4([4]byte{198, 51, byte(100 + i/512), byte(i / 2)})
		} else {
			addr = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
		}
		owner, _ := Owner(addr, cs)
		counts[owner]++
	}
	for _, c := range cs {
		share := float64(counts[c.Node]) / total
		if share < 0.25 || share > 0.42 {
			t.Errorf("%s owns %.1f%% of %d addresses, want 25%%..42%% (all: %v)", c.Node, 100*share, total, counts)
		}
	}
}

func BenchmarkOwner1000(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	cs := make([]Candidate, 1000)
	for i := range cs {
		cs[i] = Candidate{Node: fmt.Sprintf("worker-%04d.rack-%02d.example.internal", i, i%40)}
	}
	addrs := make([]netip.Addr, 256)
	for i := range addrs {
		addrs[i] = randomAddr(r)
	}
	b.ReportAllocs()
	owners := map[string]bool{}
	for i := 0; b.Loop(); i++ {
		owner, ok := Owner(addrs[i%len(addrs)], cs)
		if !ok {
			b.Fatal("no owner among 1,000 candidates")
		}
		owners[owner] = true
	}
	if len(owners) < 2 && b.N > 50 {
		b.Fatalf("%d elections all chose %v: the hash is not spreading", b.N, owners)
	}
}

func TestZoneIsIgnored(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	cs := nodes(names...)
	for i := range 64 {
		plain := netip.AddrFrom16([16]byte{0xfe, 0x80, 15: byte(i)})
		want := digestOrder(plain.String(), names)[0]
		for _, zone := range []string{"eth0", "a-very-long-zone-name-that-is-longer-than-any-buffer-we-keep-around"} {
			if got, _ := Owner(plain.WithZone(zone), cs); got != want {
				t.Errorf("%v with zone %q: owner %q, without the zone %q", plain, zone, got, want)
			}
		}
	}
}
