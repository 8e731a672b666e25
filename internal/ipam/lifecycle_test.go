package ipam

import "testing"

// holding returns a step that only checks who holds what.
func holding(h map[ServiceKey]Assignment) step { return step{holds: h} }

func TestAllocateKeepsAndMoves(t *testing.T) {
	dual := mkPool("d", []string{"10.0.0.0/32", "2001:db8::/128"})
	runScenarios(t, []scenario{{
		name:  "same request twice: same assignment",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "ports change in place while sharing",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			alloc(mkReq("x", share("k", "TCP/8080")), asg("a", "10.0.0.0")),
			alloc(mkReq("z", share("k", "TCP/80")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "a sole user changes its key in place",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x", share("k1", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("x", share("k2", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k2", "TCP/443")), asg("a", "10.0.0.0")),
			alloc(mkReq("z", share("k1", "TCP/443")), asg("a", "10.0.0.1")),
		},
	}, {
		name:  "a shared user changing its key moves, make before break",
		pools: []Pool{mkPool("a", []string{"10.0.0.0/31"})},
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			alloc(mkReq("x", share("k2", "TCP/80")), asg("a", "10.0.0.1")),
			holding(map[ServiceKey]Assignment{svc("y"): asg("a", "10.0.0.0")}),
		},
	}, {
		name:  "the new address cannot be the old one: failure keeps the old",
		pools: []Pool{mkPool("a", slash32)},
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			fails(mkReq("y", share("k2", "TCP/443")), ErrPoolExhausted, `no available IPv4 addresses in pool "a"`),
			holding(map[ServiceKey]Assignment{svc("y"): asg("a", "10.0.0.0")}),
		},
	}, {
		name:  "a failed Allocate keeps the old request too",
		pools: []Pool{mkPool("a", slash32)},
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			fails(mkReq("x", share("k", "TCP/443"), pinned("nope")), ErrUnknownPool, `pool "nope" does not exist`),
			fails(mkReq("y", share("k", "TCP/80"), want("10.0.0.0")), ErrRequestedIPInUse,
				"requested IP 10.0.0.0 is in use by service ns/x (cannot share: both use TCP/80)"),
		},
	}, {
		name:  "a new requested IP moves; the old one is freed",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x", want("10.0.0.1")), asg("a", "10.0.0.1")),
			alloc(mkReq("x", want("10.0.0.2")), asg("a", "10.0.0.2")),
			alloc(mkReq("y"), asg("a", "10.0.0.0")),
			alloc(mkReq("z"), asg("a", "10.0.0.1")),
		},
	}, {
		name:  "requesting the held address keeps it",
		pools: []Pool{mkPool("a", slash32)},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("x", want("10.0.0.0")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "dropping the requested IP keeps the address",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x", want("10.0.0.2")), asg("a", "10.0.0.2")),
			alloc(mkReq("x"), asg("a", "10.0.0.2")),
		},
	}, {
		name:  "pinning another pool moves; failure keeps the old",
		pools: []Pool{mkPool("a", slash30, prio(1)), mkPool("b", []string{"10.0.1.0/32"}, prio(2))},
		steps: []step{
			alloc(mkReq("y", pinned("b")), asg("b", "10.0.1.0")),
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			fails(mkReq("x", pinned("b")), ErrPoolExhausted, `no available IPv4 addresses in pool "b"`),
			holding(map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0")}),
			release("y"),
			alloc(mkReq("x", pinned("b")), asg("b", "10.0.1.0")),
			alloc(mkReq("z"), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "pinning the held pool keeps the address",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x", want("10.0.0.3")), asg("a", "10.0.0.3")),
			alloc(mkReq("x", pinned("a")), asg("a", "10.0.0.3")),
		},
	}, {
		name:  "a pool that no longer admits the service: move",
		pools: []Pool{mkPool("a", slash30), mkPool("b", []string{"10.0.1.0/30"})},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("x", eligible("b")), asg("b", "10.0.1.0")),
		},
	}, {
		name:  "PreferDualStack gets the missing family from the same pool later",
		pools: []Pool{dual, mkPool("v6", []string{"2001:db8:9::/120"})},
		steps: []step{
			alloc(mkReq("y", v6, pinned("d")), asg("d", "2001:db8::")),
			alloc(mkReq("x", prefer), asg("d", "10.0.0.0")),
			alloc(mkReq("x", prefer), asg("d", "10.0.0.0")),
			release("y"),
			alloc(mkReq("x", prefer), asg("d", "10.0.0.0", "2001:db8::")),
		},
	}, {
		name:  "dual to single stack releases the other family",
		pools: []Pool{dual},
		steps: []step{
			alloc(mkReq("x", prefer), asg("d", "10.0.0.0", "2001:db8::")),
			alloc(mkReq("x"), asg("d", "10.0.0.0")),
			alloc(mkReq("y", v6), asg("d", "2001:db8::")),
		},
	}, {
		name:  "RequireDualStack adds the family from the held pool",
		pools: []Pool{mkPool("a", []string{"10.0.1.0/30"}, prio(1)), dual},
		steps: []step{
			alloc(mkReq("x", pinned("d")), asg("d", "10.0.0.0")),
			alloc(mkReq("x", require), asg("d", "10.0.0.0", "2001:db8::")),
		},
	}, {
		name:  "RequireDualStack leaves a single-family pool",
		pools: []Pool{mkPool("a", []string{"10.0.1.0/30"}, prio(1)), dual},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.1.0")),
			alloc(mkReq("x", require), asg("d", "10.0.0.0", "2001:db8::")),
			alloc(mkReq("y"), asg("a", "10.0.1.0")),
		},
	}, {
		name:  "a family switch takes a new address",
		pools: []Pool{dual},
		steps: []step{
			alloc(mkReq("x"), asg("d", "10.0.0.0")),
			alloc(mkReq("x", v6), asg("d", "2001:db8::")),
			alloc(mkReq("y"), asg("d", "10.0.0.0")),
		},
	}})
}

func TestReleaseAndLookups(t *testing.T) {
	b := runSteps(t, []Pool{mkPool("a", slash30)}, []step{
		alloc(mkReq("x"), asg("a", "10.0.0.0")),
		alloc(mkReq("y", want("10.0.0.3")), asg("a", "10.0.0.3")),
	})
	if got, want := b.Services(), []ServiceKey{svc("x"), svc("y")}; diff(want, got) != "" {
		t.Errorf("Services() = %v, want %v", got, want)
	}
	if got, ok := b.Release(svc("x")); !ok || diff(asg("a", "10.0.0.0"), got) != "" {
		t.Errorf("Release(x) = %v, %v", got, ok)
	}
	if _, ok := b.Release(svc("x")); ok {
		t.Error("second Release(x) reported something released")
	}
	if _, ok := b.Assigned(svc("x")); ok {
		t.Error("x still assigned after Release")
	}
	if h := b.Holders(ip("10.0.0.0")); h != nil {
		t.Errorf("Holders(10.0.0.0) = %v after release", h)
	}
	for addr, want := range map[string]string{"10.0.0.1": "a", "10.0.0.9": ""} {
		if got, _ := b.PoolOf(ip(addr)); got != want {
			t.Errorf("PoolOf(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestOrderingAcrossNamespaces(t *testing.T) {
	b := mustBook(t, mkPool("a", slash30))
	for _, k := range []ServiceKey{{"b", "x"}, {"a", "z"}, {"a", "y"}} {
		r := mkReq("", eligible("a"), share("k"))
		r.Service = k
		r.Ports = []Port{{Protocol: "TCP", Port: int32(len(k.Name) + int(k.Name[0]))}}
		if _, err := b.Allocate(r); err != nil {
			t.Fatal(err)
		}
	}
	want := []ServiceKey{{"a", "y"}, {"a", "z"}, {"b", "x"}}
	if d := diff(want, b.Holders(ip("10.0.0.0"))); d != "" {
		t.Errorf("Holders (-want +got):\n%s", d)
	}
	if d := diff(want, b.Services()); d != "" {
		t.Errorf("Services (-want +got):\n%s", d)
	}
}

func TestStrings(t *testing.T) {
	for got, want := range map[string]string{
		IPv4.String():             "IPv4",
		IPv6.String():             "IPv6",
		Family(0).String():        "unknown family",
		SingleStack.String():      "SingleStack",
		PreferDualStack.String():  "PreferDualStack",
		RequireDualStack.String(): "RequireDualStack",
		FamilyPolicy(9).String():  "unknown policy",
		ErrNotInPool.Error():      "address is in no pool",
		Port{"UDP", 53}.String():  "UDP/53",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
