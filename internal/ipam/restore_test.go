package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// claim builds a claim created `age` minutes after t0.
func claim(r Request, age int, addrs ...string) Claim {
	return Claim{Request: r, Addrs: ips(addrs...), Created: t0.Add(time.Duration(age) * time.Minute)}
}

// conflictText is a Conflict reduced to what a test compares.
type conflictText struct {
	Service, Addr, Err string
}

func texts(cs []Conflict) []conflictText {
	var out []conflictText
	for _, c := range cs {
		a := ""
		if c.Addr.IsValid() {
			a = c.Addr.String()
		}
		out = append(out, conflictText{c.Service.String(), a, c.Err.Error()})
	}
	return out
}

func TestRestore(t *testing.T) {
	pools := []Pool{
		mkPool("a", []string{"10.0.0.0/30", "2001:db8:a::/126"}),
		mkPool("b", []string{"10.0.1.0/30", "2001:db8:b::/126"}, noAuto),
		mkPool("bug", []string{"10.0.2.0/24"}, buggy),
	}
	tests := []struct {
		name   string
		before []Request // allocated before Restore
		claims []Claim
		want   []conflictText
		holds  map[ServiceKey]Assignment
	}{{
		name:   "valid claims are registered as they are",
		claims: []Claim{claim(mkReq("x", prefer), 0, "10.0.0.2", "2001:db8:a::3"), claim(mkReq("y"), 1, "10.0.1.1")},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.2", "2001:db8:a::3"), svc("y"): asg("b", "10.0.1.1")},
	}, {
		name:   "the earlier claim keeps a duplicate",
		claims: []Claim{claim(mkReq("late"), 5, "10.0.0.1"), claim(mkReq("early"), 1, "10.0.0.1")},
		want:   []conflictText{{"ns/late", "10.0.0.1", "IP 10.0.0.1 is in use by service ns/early (cannot share: this service has no allow-shared-ip annotation)"}},
		holds:  map[ServiceKey]Assignment{svc("early"): asg("a", "10.0.0.1"), svc("late"): {}},
	}, {
		name:   "equal creation times: by namespace and name",
		claims: []Claim{claim(mkReq("b"), 0, "10.0.0.1"), claim(mkReq("a"), 0, "10.0.0.1")},
		want:   []conflictText{{"ns/b", "10.0.0.1", "IP 10.0.0.1 is in use by service ns/a (cannot share: this service has no allow-shared-ip annotation)"}},
	}, {
		name: "compatible duplicates share; the first port clash loses",
		claims: []Claim{
			claim(mkReq("c", share("k", "TCP/80")), 3, "10.0.0.1"),
			claim(mkReq("b", share("k", "TCP/443")), 2, "10.0.0.1"),
			claim(mkReq("a", share("k", "TCP/80")), 1, "10.0.0.1"),
		},
		want: []conflictText{{"ns/c", "10.0.0.1", "IP 10.0.0.1 is in use by services ns/a, ns/b (cannot share: both use TCP/80)"}},
	}, {
		name: "compatible duplicates share",
		claims: []Claim{
			claim(mkReq("b", share("k", "TCP/443")), 2, "10.0.0.1"),
			claim(mkReq("a", share("k", "TCP/80")), 1, "10.0.0.1"),
			claim(mkReq("c", share("k", "UDP/53")), 0, "10.0.0.1"),
		},
		holds: map[ServiceKey]Assignment{svc("a"): asg("a", "10.0.0.1"), svc("c"): asg("a", "10.0.0.1")},
	}, {
		name:   "a service already in the book keeps its address",
		before: []Request{mkReq("live", want("10.0.0.1"))},
		claims: []Claim{claim(mkReq("old"), -100, "10.0.0.1")},
		want:   []conflictText{{"ns/old", "10.0.0.1", "IP 10.0.0.1 is in use by service ns/live (cannot share: this service has no allow-shared-ip annotation)"}},
	}, {
		name:   "a service already in the book is not claimed again",
		before: []Request{mkReq("live", want("10.0.0.1"))},
		claims: []Claim{claim(mkReq("live"), 0, "10.0.0.2")},
		want:   []conflictText{{"ns/live", "", "service ns/live already holds an assignment"}},
		holds:  map[ServiceKey]Assignment{svc("live"): asg("a", "10.0.0.1")},
	}, {
		name:   "a service claimed twice is refused",
		claims: []Claim{claim(mkReq("x"), 0, "10.0.0.1"), claim(mkReq("x"), 1, "10.0.0.2")},
		want:   []conflictText{{"ns/x", "", "service ns/x is claimed 2 times"}},
		holds:  map[ServiceKey]Assignment{svc("x"): {}},
	}, {
		name:   "outside every pool, or excluded by avoidBuggyIPs",
		claims: []Claim{claim(mkReq("x"), 0, "192.0.2.1"), claim(mkReq("y"), 0, "10.0.2.0")},
		want: []conflictText{
			{"ns/x", "192.0.2.1", "IP 192.0.2.1 is not in any address pool"},
			{"ns/y", "10.0.2.0", `IP 10.0.2.0 is excluded by avoidBuggyIPs in pool "bug"`},
		},
	}, {
		name:   "a pool that does not admit the service",
		claims: []Claim{claim(mkReq("x", eligible("a")), 0, "10.0.1.1")},
		want:   []conflictText{{"ns/x", "10.0.1.1", `IP 10.0.1.1 is in pool "b", which does not admit this service (serviceAllocation)`}},
	}, {
		name:   "a family the service does not use; the valid address stays",
		claims: []Claim{claim(mkReq("x"), 0, "10.0.0.1", "2001:db8:a::1")},
		want:   []conflictText{{"ns/x", "2001:db8:a::1", "IP 2001:db8:a::1 is IPv6, but the service is single-stack IPv4"}},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.1")},
	}, {
		name:   "two addresses of one family",
		claims: []Claim{claim(mkReq("x", prefer), 0, "10.0.0.1", "10.0.0.2", "2001:db8:a::1")},
		want: []conflictText{
			{"ns/x", "10.0.0.1", "service ns/x holds more than one IPv4 address"},
			{"ns/x", "10.0.0.2", "service ns/x holds more than one IPv4 address"},
		},
		holds: map[ServiceKey]Assignment{svc("x"): asg("a", "2001:db8:a::1")},
	}, {
		name:   "two pools: the primary family's pool wins",
		claims: []Claim{claim(mkReq("x", prefer, v6), 0, "10.0.0.1", "2001:db8:b::1")},
		want:   []conflictText{{"ns/x", "10.0.0.1", `IP 10.0.0.1 is in pool "a", but the service's IPv6 address is in pool "b"`}},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("b", "2001:db8:b::1")},
	}, {
		name:   "an invalid request refuses the claim",
		claims: []Claim{claim(Request{Service: svc("x")}, 0, "10.0.0.1")},
		want:   []conflictText{{"ns/x", "", "service ns/x has no IP family"}},
	}, {
		name:   "an invalid address",
		claims: []Claim{claim(mkReq("x"), 0, "::ffff:10.0.0.1")},
		want:   []conflictText{{"ns/x", "::ffff:10.0.0.1", "IP ::ffff:10.0.0.1 is an IPv4-mapped IPv6 address; use plain IPv4"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Every order of the claims must give the same result.
			var first *Book
			for _, claims := range permutations(tc.claims) {
				b := mustBook(t, pools...)
				for _, r := range tc.before {
					if _, err := b.Allocate(withAllEligible(pools, r)); err != nil {
						t.Fatal(err)
					}
				}
				for i := range claims {
					claims[i].Request = withAllEligible(pools, claims[i].Request)
				}
				got := b.Restore(claims)
				if d := diff(tc.want, texts(got)); d != "" {
					t.Fatalf("conflicts for claim order %v (-want +got):\n%s", names(claims), d)
				}
				checkInvariants(t, b)
				checkRestoreUnordered(t, pools, tc.before, claims, b, got)
				for k, want := range tc.holds {
					got, _ := b.Assigned(k)
					if d := diff(want, got); d != "" {
						t.Fatalf("Assigned(%s) (-want +got):\n%s", k, d)
					}
				}
				if first != nil {
					if d := diff(snapshot(first), snapshot(b)); d != "" {
						t.Fatalf("order %v changed the state (-first +this):\n%s", names(claims), d)
					}
				}
				first = b
			}
			checkRestoreSorted(t, pools, tc.before, tc.claims, first)
		})
	}
}

// checkRestoreSorted runs RestoreSorted over the claims in Restore's
// order, when they name each Service once, and compares its book and
// conflicts with what Restore gave (want).
func checkRestoreSorted(t *testing.T, pools []Pool, before []Request, claims []Claim, want *Book) {
	t.Helper()
	sorted := slices.Clone(claims)
	for i := range sorted {
		sorted[i].Request = withAllEligible(pools, sorted[i].Request)
	}
	slices.SortFunc(sorted, func(x, y Claim) int {
		return compareClaims(x.Created, x.Request.Service, y.Created, y.Request.Service)
	})
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Request.Service == sorted[i-1].Request.Service {
			return // a Service claimed twice: Restore's case alone
		}
	}
	b := mustBook(t, pools...)
	for _, r := range before {
		if _, err := b.Allocate(withAllEligible(pools, r)); err != nil {
			t.Fatal(err)
		}
	}
	wantConflicts := mustBook(t, pools...)
	for _, r := range before {
		if _, err := wantConflicts.Allocate(withAllEligible(pools, r)); err != nil {
			t.Fatal(err)
		}
	}
	// One claim value, rewritten for each with slices of its own, which
	// the book takes over: it must keep nothing of the value itself.
	var c Claim
	got := b.RestoreSorted(len(sorted), func(yield func(*Claim) bool) {
		for _, s := range sorted {
			c = s
			c.Addrs = slices.Clone(s.Addrs)
			c.Request.RequestedIPs = slices.Clone(s.Request.RequestedIPs)
			c.Request.Ports = slices.Clone(s.Request.Ports)
			c.Request.EligiblePools = slices.Clone(s.Request.EligiblePools)
			if !yield(&c) {
				return
			}
			c = Claim{Request: Request{Service: svc("overwritten")}}
		}
	})
	if d := diff(texts(wantConflicts.Restore(sorted)), texts(got)); d != "" {
		t.Fatalf("RestoreSorted's conflicts differ from Restore's (-Restore +RestoreSorted):\n%s", d)
	}
	checkInvariants(t, b)
	if d := diff(snapshot(want), snapshot(b)); d != "" {
		t.Fatalf("RestoreSorted's book differs from Restore's (-Restore +RestoreSorted):\n%s", d)
	}
}

// checkRestoreUnordered registers the claims, in the order given, one by
// one with RestoreUnordered. If a conflict of Restore's (restored, made
// want) depends on the order, RestoreUnordered must return one that does,
// in any order; if none of RestoreUnordered's does, its book and its
// conflicts must be Restore's: that is what lets a caller restore as it
// reads and fall back to the ordered restore at the first conflict that
// depends on the order.
func checkRestoreUnordered(t *testing.T, pools []Pool, before []Request, claims []Claim, want *Book, restored []Conflict) {
	t.Helper()
	b := mustBook(t, pools...)
	for _, r := range before {
		if _, err := b.Allocate(withAllEligible(pools, r)); err != nil {
			t.Fatal(err)
		}
	}
	var conflicts []Conflict
	for _, c := range claims {
		c.Addrs = slices.Clone(c.Addrs)
		c.Request.Ports = slices.Clone(c.Request.Ports)
		conflicts = append(conflicts, b.RestoreUnordered(&c)...)
	}
	switch {
	case slices.ContainsFunc(restored, Conflict.DependsOnOrder) && !slices.ContainsFunc(conflicts, Conflict.DependsOnOrder):
		t.Fatalf("claim order %v: Restore refused a claim for another's sake (%v), RestoreUnordered returned no such conflict: %v",
			names(claims), texts(restored), texts(conflicts))
	case !slices.ContainsFunc(conflicts, Conflict.DependsOnOrder):
		checkInvariants(t, b)
		if d := diff(snapshot(want), snapshot(b)); d != "" {
			t.Fatalf("claim order %v: RestoreUnordered's book differs from Restore's (-Restore +RestoreUnordered):\n%s", names(claims), d)
		}
		SortConflicts(conflicts)
		if d := diff(texts(restored), texts(conflicts)); d != "" {
			t.Fatalf("claim order %v: RestoreUnordered's conflicts differ from Restore's (-Restore +RestoreUnordered):\n%s", names(claims), d)
		}
	}
}

func TestRestoreSortedRefusesOutOfOrder(t *testing.T) {
	pools := []Pool{mkPool("a", slash30)}
	claims := []Claim{
		claim(withAllEligible(pools, mkReq("b")), 1, "10.0.0.1"),
		claim(withAllEligible(pools, mkReq("a")), 1, "10.0.0.2"), // same age, sorts before b
		claim(withAllEligible(pools, mkReq("c")), 0, "10.0.0.3"), // older than b
		claim(withAllEligible(pools, mkReq("b")), 1, "10.0.0.0"), // b again
		claim(withAllEligible(pools, mkReq("d")), 2, "10.0.0.0"),
	}
	b := mustBook(t, pools...)
	got := b.RestoreSorted(len(claims), slices.Values(pointers(claims)))
	want := []conflictText{
		{"ns/a", "", "service ns/a is claimed out of order: created 2024-01-01T00:01:00Z, after ns/b created 2024-01-01T00:01:00Z"},
		{"ns/b", "", "service ns/b is claimed out of order: created 2024-01-01T00:01:00Z, after ns/b created 2024-01-01T00:01:00Z"},
		{"ns/c", "", "service ns/c is claimed out of order: created 2024-01-01T00:00:00Z, after ns/b created 2024-01-01T00:01:00Z"},
	}
	if d := diff(want, texts(got)); d != "" {
		t.Fatalf("conflicts (-want +got):\n%s", d)
	}
	for name, want := range map[string]Assignment{"a": {}, "b": asg("a", "10.0.0.1"), "c": {}, "d": asg("a", "10.0.0.0")} {
		if got, _ := b.Assigned(svc(name)); !reflect.DeepEqual(got, want) {
			t.Errorf("Assigned(%s) = %v, want %v", name, got, want)
		}
	}
	checkInvariants(t, b)
}

func pointers(cs []Claim) []*Claim {
	out := make([]*Claim, len(cs))
	for i := range cs {
		out[i] = &cs[i]
	}
	return out
}

func TestRestoreConflictErrorsMatchReasons(t *testing.T) {
	b := mustBook(t, mkPool("a", slash30))
	got := b.Restore([]Claim{
		claim(mkReq("x", eligible("a")), 0, "10.0.0.1"),
		claim(mkReq("y", eligible("a")), 1, "10.0.0.1"),
		claim(mkReq("z", eligible("a")), 1, "10.9.0.1"),
	})
	var inUse *InUseError
	if len(got) != 2 || !errors.As(got[0].Err, &inUse) || !errors.Is(got[1].Err, ErrNoMatchingPool) {
		t.Fatalf("conflicts = %v", got)
	}
	if d := diff([]ServiceKey{svc("x")}, inUse.Holders); d != "" || inUse.Addr != ip("10.0.0.1") {
		t.Errorf("InUseError = %+v", inUse)
	}
}

func TestRestoreThenAllocate(t *testing.T) {
	pools := []Pool{mkPool("a", []string{"10.0.0.0/30", "2001:db8::/126"})}
	b := mustBook(t, pools...)
	reqX := mkReq("x", require, eligible("a"))
	if c := b.Restore([]Claim{claim(reqX, 0, "10.0.0.2")}); c != nil {
		t.Fatalf("Restore: %v", c)
	}
	// The held IPv4 address stays; the missing family is added.
	got, err := b.Allocate(reqX)
	if err != nil || diff(asg("a", "10.0.0.2", "2001:db8::"), got) != "" {
		t.Fatalf("Allocate = %v, %v", got, err)
	}
	// Nobody else gets the restored address.
	got, err = b.Allocate(mkReq("y", eligible("a")))
	if err != nil || diff(asg("a", "10.0.0.0"), got) != "" {
		t.Fatalf("Allocate(y) = %v, %v", got, err)
	}
}

// permutations returns every order of cs (cs is short in tests).
func permutations(cs []Claim) [][]Claim {
	if len(cs) <= 1 {
		return [][]Claim{slices.Clone(cs)}
	}
	var out [][]Claim
	for i := range cs {
		rest := slices.Concat(cs[:i:i], cs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]Claim{cs[i]}, p...))
		}
	}
	return out
}

func names(cs []Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Request.Service.Name)
	}
	return out
}

// state is everything observable about a book, for comparisons.
type state struct {
	Assigned map[ServiceKey]Assignment
	Holders  map[string][]ServiceKey
	Stats    []Stats
	Leaving  map[ServiceKey][]netip.Addr
}

func snapshot(b *Book) state {
	s := state{Assigned: map[ServiceKey]Assignment{}, Holders: map[string][]ServiceKey{}, Stats: b.AllStats(),
		Leaving: map[ServiceKey][]netip.Addr{}}
	for k, h := range b.svcs {
		if len(h.leaving) > 0 {
			s.Leaving[k] = slices.Clone(h.leaving)
		}
	}
	for _, k := range b.Services() {
		a, _ := b.Assigned(k)
		s.Assigned[k] = a
		for _, addr := range a.Addrs {
			s.Holders[addr.String()] = b.Holders(addr)
		}
	}
	return s
}

// TestRestoreSortedAllocatesInBlocks: a startup restore takes the
// holders and address states of the Services it is told of from two
// blocks, not one allocation each (see Book.spareHolders): fewer
// allocations than Services. Past the blocks, a Service gets its own.
func TestRestoreSortedAllocatesInBlocks(t *testing.T) {
	const n = 2000
	pools := []Pool{mkPool("a", []string{"10.0.0.0/16"})}
	claims := make([]Claim, n)
	for i := range claims {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		claims[i] = claim(withAllEligible(pools, mkReq(fmt.Sprintf("s%05d", i))), 0, a.String())
	}
	b := mustBook(t, pools...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	conflicts := b.RestoreSorted(n/2, slices.Values(pointers(claims)))
	runtime.ReadMemStats(&after)
	if len(conflicts) != 0 || len(b.svcs) != n {
		t.Fatalf("%d conflicts, %d Services restored, want 0 and %d", len(conflicts), len(b.svcs), n)
	}
	// n/2 Services from the blocks, n/2 with a holder and a state each.
	if got := after.Mallocs - before.Mallocs; got > n+n/4 {
		t.Errorf("restoring %d Services after being told of %d made %d allocations: want about %d", n, n/2, got, n)
	}
	checkInvariants(t, b)
}

// TestForgottenHolderIsCleared: a restored Service that leaves the book
// (released, or decided to nothing) leaves its block entry empty, so the
// block, alive for the other Services, keeps none of its slices.
func TestForgottenHolderIsCleared(t *testing.T) {
	pools := []Pool{mkPool("a", []string{"10.0.0.0/30"})}
	claims := []Claim{
		claim(withAllEligible(pools, mkReq("a")), 0, "10.0.0.1"),
		claim(withAllEligible(pools, mkReq("b")), 1, "10.0.0.2"),
		claim(withAllEligible(pools, mkReq("c")), 2, "10.0.0.3"),
	}
	b := mustBook(t, pools...)
	if c := b.RestoreSorted(len(claims), slices.Values(pointers(claims))); len(c) != 0 {
		t.Fatalf("conflicts: %v", c)
	}
	released, settled := b.svcs[svc("a")], b.svcs[svc("b")]
	if _, held := b.Release(svc("a")); !held {
		t.Fatal("a held nothing")
	}
	// b gives its address up, and the API server confirms it.
	b.set(withAllEligible(pools, mkReq("b")), nil, "")
	if gone := b.Settle(svc("b")); len(gone) != 1 {
		t.Fatalf("b settled %v, want its one address", gone)
	}
	for name, h := range map[string]*holder{"a": released, "b": settled} {
		if _, still := b.svcs[svc(name)]; still {
			t.Fatalf("%s is still in the book", name)
		}
		if !reflect.DeepEqual(*h, holder{}) {
			t.Errorf("%s left the book, but its block entry still holds %+v", name, *h)
		}
	}
	checkInvariants(t, b)
}
