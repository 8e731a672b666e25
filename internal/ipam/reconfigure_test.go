package ipam

import (
	"errors"
	"testing"
)

func TestReconfigure(t *testing.T) {
	base := []Pool{
		mkPool("a", []string{"10.0.0.0/30", "2001:db8:a::/126"}),
		mkPool("b", []string{"10.0.1.0/30"}),
	}
	tests := []struct {
		name     string
		before   []Request // allocated with base pools, all eligible
		pools    []Pool
		eligible map[ServiceKey][]string // nil: keep the holders' lists
		want     []conflictText
		moved    []Move
		holds    map[ServiceKey]Assignment
		stats    map[string]FamilyStats // IPv4 stats after
	}{{
		name:   "nothing changes: nothing reported",
		before: []Request{mkReq("x"), mkReq("y", pinned("b"))},
		pools:  base,
		holds:  map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0"), svc("y"): asg("b", "10.0.1.0")},
	}, {
		name:   "pool order, priority and autoAssign do not move addresses",
		before: []Request{mkReq("x"), mkReq("y", pinned("b"))},
		pools: []Pool{
			mkPool("b", []string{"10.0.1.0/30"}, prio(1)),
			mkPool("a", []string{"10.0.0.0/30", "2001:db8:a::/126"}, noAuto, prio(9)),
		},
		holds: map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0"), svc("y"): asg("b", "10.0.1.0")},
	}, {
		name:   "an address in no pool any more stays held and is reported",
		before: []Request{mkReq("x"), mkReq("y", want("10.0.0.3"))},
		pools:  []Pool{mkPool("a", []string{"10.0.0.0/31", "2001:db8:a::/126"}), base[1]},
		want:   []conflictText{{"ns/y", "10.0.0.3", "IP 10.0.0.3 is no longer in any address pool"}},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0"), svc("y"): asg("", "10.0.0.3")},
		stats:  map[string]FamilyStats{"a": {Total: CountOf(2), Assigned: CountOf(1), Available: CountOf(1)}},
	}, {
		name:   "avoidBuggyIPs switched on",
		before: []Request{mkReq("x")},
		pools:  []Pool{mkPool("a", []string{"10.0.0.0/30", "2001:db8:a::/126"}, buggy), base[1]},
		want:   []conflictText{{"ns/x", "10.0.0.0", `IP 10.0.0.0 is now excluded by avoidBuggyIPs in pool "a"`}},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("", "10.0.0.0")},
		stats:  map[string]FamilyStats{"a": {Total: CountOf(3), Available: CountOf(3)}},
	}, {
		name:   "an address that moved to another pool stays and is re-accounted",
		before: []Request{mkReq("x"), mkReq("y")},
		pools: []Pool{
			mkPool("a", []string{"10.0.0.1-10.0.0.3", "2001:db8:a::/126"}),
			mkPool("b", []string{"10.0.1.0/30"}),
			mkPool("c", []string{"10.0.0.0/32"}),
		},
		eligible: map[ServiceKey][]string{svc("x"): {"a", "b", "c"}, svc("y"): {"a", "b", "c"}},
		moved:    []Move{{Service: svc("x"), From: "a", To: "c"}},
		holds:    map[ServiceKey]Assignment{svc("x"): asg("c", "10.0.0.0"), svc("y"): asg("a", "10.0.0.1")},
		stats: map[string]FamilyStats{
			"a": {Total: CountOf(3), Assigned: CountOf(1), Available: CountOf(2)},
			"c": {Total: CountOf(1), Assigned: CountOf(1)},
		},
	}, {
		name:   "a renamed pool is a move",
		before: []Request{mkReq("x")},
		pools:  []Pool{mkPool("gold", []string{"10.0.0.0/30", "2001:db8:a::/126"}), base[1]},
		eligible: map[ServiceKey][]string{
			svc("x"): {"gold", "b"},
		},
		moved: []Move{{Service: svc("x"), From: "a", To: "gold"}},
		holds: map[ServiceKey]Assignment{svc("x"): asg("gold", "10.0.0.0")},
	}, {
		name:   "without new eligibility the old lists apply",
		before: []Request{mkReq("x")},
		pools:  []Pool{mkPool("gold", []string{"10.0.0.0/30", "2001:db8:a::/126"}), base[1]},
		want:   []conflictText{{"ns/x", "10.0.0.0", `IP 10.0.0.0 is in pool "gold", which does not admit this service (serviceAllocation)`}},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("gold", "10.0.0.0")},
	}, {
		name:     "a pool that no longer admits the service",
		before:   []Request{mkReq("x"), mkReq("y")},
		pools:    base,
		eligible: map[ServiceKey][]string{svc("x"): {"b"}, svc("y"): {"a", "b"}},
		want:     []conflictText{{"ns/x", "10.0.0.0", `IP 10.0.0.0 is in pool "a", which does not admit this service (serviceAllocation)`}},
		holds:    map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0"), svc("y"): asg("a", "10.0.0.1")},
	}, {
		name:   "an address that moved out of the pinned pool",
		before: []Request{mkReq("x", pinned("a"))},
		pools:  []Pool{mkPool("a", []string{"2001:db8:a::/126"}), mkPool("b", []string{"10.0.0.0/30", "10.0.1.0/30"})},
		want:   []conflictText{{"ns/x", "10.0.0.0", `IP 10.0.0.0 is now in pool "b", but the service asks for pool "a"`}},
		holds:  map[ServiceKey]Assignment{svc("x"): asg("b", "10.0.0.0")},
	}, {
		name:   "a dual-stack assignment split across pools: the primary's pool wins",
		before: []Request{mkReq("x", require, v6)},
		pools: []Pool{
			mkPool("a", []string{"2001:db8:a::/126"}),
			mkPool("b", []string{"10.0.0.0/30", "10.0.1.0/30"}),
		},
		want:  []conflictText{{"ns/x", "10.0.0.0", `IP 10.0.0.0 is now in pool "b", but the service's other address is in pool "a"`}},
		holds: map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0", "2001:db8:a::")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustBook(t, base...)
			for _, r := range tc.before {
				if _, err := b.Allocate(withAllEligible(base, r)); err != nil {
					t.Fatal(err)
				}
			}
			var elig func(ServiceKey) []string
			if tc.eligible != nil {
				elig = func(k ServiceKey) []string { return tc.eligible[k] }
			}
			rep, err := b.Reconfigure(tc.pools, elig)
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(tc.want, texts(rep.Invalid)); d != "" {
				t.Errorf("Invalid (-want +got):\n%s", d)
			}
			if d := diff(tc.moved, rep.Moved); d != "" {
				t.Errorf("Moved (-want +got):\n%s", d)
			}
			for k, want := range tc.holds {
				got, _ := b.Assigned(k)
				if d := diff(want, got); d != "" {
					t.Errorf("Assigned(%s) (-want +got):\n%s", k, d)
				}
			}
			for name, want := range tc.stats {
				st, _ := b.Stats(name)
				if d := diff(want, st.IPv4); d != "" {
					t.Errorf("Stats(%s).IPv4 (-want +got):\n%s", name, d)
				}
			}
			checkInvariants(t, b)
		})
	}
}

func TestReconfigureInvalidPoolsChangeNothing(t *testing.T) {
	pools := []Pool{mkPool("a", slash30)}
	b := mustBook(t, pools...)
	if _, err := b.Allocate(mkReq("x", eligible("a"))); err != nil {
		t.Fatal(err)
	}
	before := snapshot(b)
	_, err := b.Reconfigure([]Pool{mkPool("a", slash30), mkPool("b", []string{"10.0.0.2/31"})}, nil)
	if !errors.Is(err, ErrInvalidPool) {
		t.Fatalf("Reconfigure error = %v, want ErrInvalidPool", err)
	}
	if d := diff(before, snapshot(b)); d != "" {
		t.Errorf("state changed (-before +after):\n%s", d)
	}
}

func TestAllocateAfterReconfigure(t *testing.T) {
	base := []Pool{mkPool("a", slash30), mkPool("b", []string{"10.0.1.0/30"})}
	b := mustBook(t, base...)
	x := mkReq("x", eligible("a", "b"))
	if _, err := b.Allocate(x); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reconfigure([]Pool{mkPool("a", []string{"10.0.0.2/31"}), base[1]}, nil); err != nil {
		t.Fatal(err)
	}
	// The invalid address is replaced, make before break...
	got, err := b.Allocate(x)
	if err != nil || diff(asg("a", "10.0.0.2"), got) != "" {
		t.Fatalf("Allocate = %v, %v", got, err)
	}
	// ...and, being in no pool, vanishes from the book once the write is
	// confirmed.
	b.Settle(x.Service)
	if b.addrs[ip("10.0.0.0")] != nil {
		t.Errorf("10.0.0.0 is still in the book: %+v", b.addrs[ip("10.0.0.0")])
	}
	checkInvariants(t, b)
}
