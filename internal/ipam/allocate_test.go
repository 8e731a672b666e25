package ipam

import (
	"net/netip"
	"slices"
	"testing"
)

type scenario struct {
	name  string
	pools []Pool
	steps []step
}

func runScenarios(t *testing.T, tests []scenario) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, tc.pools, tc.steps)
		})
	}
}

var (
	slash30 = []string{"10.0.0.0/30"}
	slash32 = []string{"10.0.0.0/32"}
)

func TestAllocateAutomatic(t *testing.T) {
	runScenarios(t, []scenario{{
		name:  "first address of the pool",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{alloc(mkReq("x"), asg("a", "10.0.0.0"))},
	}, {
		name:  "lowest free address after a release",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("y"), asg("a", "10.0.0.1")),
			alloc(mkReq("z"), asg("a", "10.0.0.2")),
			release("y"),
			alloc(mkReq("w"), asg("a", "10.0.0.1")),
		},
	}, {
		name:  "ranges in spec order, not address order",
		pools: []Pool{mkPool("a", []string{"10.0.1.0/31", "10.0.0.0/31"})},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.1.0")),
			alloc(mkReq("y"), asg("a", "10.0.1.1")),
			alloc(mkReq("z"), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "avoidBuggyIPs skips .255 and .0",
		pools: []Pool{mkPool("a", []string{"10.0.0.254-10.0.1.1"}, buggy)},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.254")),
			alloc(mkReq("y"), asg("a", "10.0.1.1")),
			fails(mkReq("z"), ErrPoolExhausted, `no available IPv4 addresses in pool "a"`),
		},
	}, {
		name:  "avoidBuggyIPs does not apply to IPv6",
		pools: []Pool{mkPool("a", []string{"2001:db8::ff-2001:db8::100"}, buggy)},
		steps: []step{alloc(mkReq("x", v6), asg("a", "2001:db8::ff"))},
	}, {
		name:  "autoAssign false is never chosen automatically",
		pools: []Pool{mkPool("off", slash30, noAuto), mkPool("on", []string{"10.0.1.0/30"})},
		steps: []step{alloc(mkReq("x"), asg("on", "10.0.1.0"))},
	}, {
		name:  "no autoAssign pool at all",
		pools: []Pool{mkPool("off", slash30, noAuto)},
		steps: []step{fails(mkReq("x"), ErrNoMatchingPool, "no address pool with autoAssign is available to this service")},
	}, {
		name: "priority: lower positive first, unset after",
		pools: []Pool{
			mkPool("p0", []string{"10.0.0.0/32"}, withSA),
			mkPool("p2", []string{"10.0.2.0/32"}, prio(2)),
			mkPool("p1", []string{"10.0.1.0/32"}, prio(1)),
		},
		steps: []step{
			alloc(mkReq("x"), asg("p1", "10.0.1.0")),
			alloc(mkReq("y"), asg("p2", "10.0.2.0")),
			alloc(mkReq("z"), asg("p0", "10.0.0.0")),
		},
	}, {
		name:  "equal priority: by name",
		pools: []Pool{mkPool("b", []string{"10.0.0.0/32"}, prio(1)), mkPool("a", []string{"10.0.1.0/32"}, prio(1))},
		steps: []step{alloc(mkReq("x"), asg("a", "10.0.1.0"))},
	}, {
		name:  "pools without serviceAllocation only when those with it are full",
		pools: []Pool{mkPool("a", []string{"10.0.0.0/32"}), mkPool("z", []string{"10.0.9.0/32"}, withSA)},
		steps: []step{
			alloc(mkReq("x"), asg("z", "10.0.9.0")),
			alloc(mkReq("y"), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "pools without serviceAllocation by name, deterministically",
		pools: []Pool{mkPool("c", []string{"10.0.0.0/32"}), mkPool("b", []string{"10.0.1.0/32"})},
		steps: []step{
			alloc(mkReq("x"), asg("b", "10.0.1.0")),
			alloc(mkReq("y"), asg("c", "10.0.0.0")),
		},
	}, {
		name:  "pools the service is not eligible for are skipped",
		pools: []Pool{mkPool("a", slash30), mkPool("b", []string{"10.0.1.0/30"})},
		steps: []step{alloc(mkReq("x", eligible("b")), asg("b", "10.0.1.0"))},
	}, {
		name:  "unknown eligible names are ignored",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{alloc(mkReq("x", eligible("ghost", "a")), asg("a", "10.0.0.0"))},
	}, {
		name:  "no eligible pool",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{fails(mkReq("x", eligible()), ErrNoMatchingPool, "no address pool with autoAssign is available to this service")},
	}, {
		name:  "exhausted: every candidate is named",
		pools: []Pool{mkPool("a", slash32), mkPool("b", []string{"10.0.1.0/32"})},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("y"), asg("b", "10.0.1.0")),
			fails(mkReq("z"), ErrPoolExhausted, `no available IPv4 addresses in pools "a", "b"`),
		},
	}, {
		name:  "no candidate has the family",
		pools: []Pool{mkPool("a", slash30)},
		steps: []step{fails(mkReq("x", v6), ErrNoMatchingPool, "no address pool available to this service has IPv6 addresses")},
	}})
}

func TestAllocatePinnedPool(t *testing.T) {
	two := []Pool{mkPool("a", slash30, noAuto), mkPool("b", []string{"10.0.1.0/32", "2001:db8::/127"})}
	runScenarios(t, []scenario{{
		name:  "pinned pool ignores autoAssign",
		pools: two,
		steps: []step{alloc(mkReq("x", pinned("a")), asg("a", "10.0.0.0"))},
	}, {
		name:  "pinned pool wins over candidate order",
		pools: []Pool{mkPool("a", slash30, prio(1)), mkPool("b", []string{"10.0.1.0/30"}, prio(2))},
		steps: []step{alloc(mkReq("x", pinned("b")), asg("b", "10.0.1.0"))},
	}, {
		name:  "unknown pool",
		pools: two,
		steps: []step{fails(mkReq("x", pinned("nope")), ErrUnknownPool, `pool "nope" does not exist`)},
	}, {
		name:  "pinned pool must admit the service",
		pools: two,
		steps: []step{fails(mkReq("x", pinned("a"), eligible("b")), ErrNotEligible, `pool "a" does not admit this service (serviceAllocation)`)},
	}, {
		name:  "pinned pool exhausted",
		pools: two,
		steps: []step{
			alloc(mkReq("x", pinned("b")), asg("b", "10.0.1.0")),
			fails(mkReq("y", pinned("b")), ErrPoolExhausted, `no available IPv4 addresses in pool "b"`),
		},
	}, {
		name:  "pinned pool lacks the family",
		pools: two,
		steps: []step{fails(mkReq("x", pinned("a"), v6), ErrNoMatchingPool, `pool "a" has no IPv6 addresses`)},
	}, {
		name:  "pinned pool lacks dual stack",
		pools: two,
		steps: []step{fails(mkReq("x", pinned("a"), require), ErrNoMatchingPool, `pool "a" has no IPv4 and IPv6 addresses`)},
	}})
}

func TestAllocateRequestedIPs(t *testing.T) {
	pools := []Pool{
		mkPool("a", slash30, noAuto),
		mkPool("b", []string{"10.0.1.0/30", "2001:db8::/126"}),
		mkPool("c", []string{"2001:db8:c::/126"}),
		mkPool("bug", []string{"10.0.2.0/24"}, buggy),
	}
	runScenarios(t, []scenario{{
		name:  "requested IP, autoAssign does not apply",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", want("10.0.0.2")), asg("a", "10.0.0.2")),
			alloc(mkReq("y", want("10.0.0.0")), asg("a", "10.0.0.0")),
			alloc(mkReq("z", pinned("a")), asg("a", "10.0.0.1")),
		},
	}, {
		name:  "requested IP in the pinned pool",
		pools: pools,
		steps: []step{alloc(mkReq("x", want("10.0.1.3"), pinned("b")), asg("b", "10.0.1.3"))},
	}, {
		name:  "both families requested",
		pools: pools,
		steps: []step{alloc(mkReq("x", require, want("2001:db8::2", "10.0.1.1")), asg("b", "10.0.1.1", "2001:db8::2"))},
	}, {
		name:  "PreferDualStack accepts one requested IP of either family",
		pools: pools,
		steps: []step{alloc(mkReq("x", prefer, want("2001:db8::1")), asg("b", "2001:db8::1"))},
	}, {
		name:  "not in any pool",
		pools: pools,
		steps: []step{fails(mkReq("x", want("192.0.2.1")), ErrNotInPool, "requested IP 192.0.2.1 is not in any address pool")},
	}, {
		name:  "excluded by avoidBuggyIPs",
		pools: pools,
		steps: []step{fails(mkReq("x", want("10.0.2.255")), ErrNoMatchingPool, `requested IP 10.0.2.255 is excluded by avoidBuggyIPs in pool "bug"`)},
	}, {
		name:  "pool does not admit the service",
		pools: pools,
		steps: []step{fails(mkReq("x", want("10.0.0.1"), eligible("b")), ErrNotEligible, `requested IP 10.0.0.1 is in pool "a", which does not admit this service (serviceAllocation)`)},
	}, {
		name:  "outside the pinned pool",
		pools: pools,
		steps: []step{fails(mkReq("x", want("10.0.0.1"), pinned("b")), ErrInvalidRequest, `requested IP 10.0.0.1 is in pool "a", not in the requested pool "b"`)},
	}, {
		name:  "from two pools",
		pools: pools,
		steps: []step{fails(mkReq("x", prefer, want("10.0.1.1", "2001:db8:c::1")), ErrInvalidRequest,
			`requested IPs are in different pools ("b" and "c"); all addresses of a service must come from one pool`)},
	}, {
		name:  "wrong family",
		pools: pools,
		steps: []step{fails(mkReq("x", want("2001:db8::1")), ErrFamilyMismatch, "requested IP 2001:db8::1 is IPv6, but the service is single-stack IPv4")},
	}, {
		name:  "two of one family",
		pools: pools,
		steps: []step{fails(mkReq("x", prefer, want("10.0.1.1", "10.0.1.2")), ErrInvalidRequest, "more than one IPv4 address requested (10.0.1.1 and 10.0.1.2)")},
	}, {
		name:  "RequireDualStack needs both",
		pools: pools,
		steps: []step{fails(mkReq("x", require, want("10.0.1.1")), ErrFamilyMismatch, "the service requires dual stack, but only the IPv4 address 10.0.1.1 is requested")},
	}, {
		name:  "in use by a service that does not share",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", want("10.0.1.0")), asg("b", "10.0.1.0")),
			fails(mkReq("y", want("10.0.1.0"), share("k")), ErrRequestedIPInUse,
				"requested IP 10.0.1.0 is in use by service ns/x (cannot share: the holder has no allow-shared-ip annotation)"),
			fails(mkReq("y", want("10.0.1.0")), ErrRequestedIPInUse,
				"requested IP 10.0.1.0 is in use by service ns/x (cannot share: this service has no allow-shared-ip annotation)"),
		},
	}, {
		name:  "in use under another key, backend or port",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("b", "10.0.1.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("b", "10.0.1.0")),
			fails(mkReq("z", want("10.0.1.0"), share("j")), ErrRequestedIPInUse,
				`requested IP 10.0.1.0 is in use by services ns/x, ns/y (cannot share: allow-shared-ip "j" differs from the holder's "k")`),
			fails(mkReq("z", want("10.0.1.0"), share("k"), backend("app=z")), ErrRequestedIPInUse,
				"requested IP 10.0.1.0 is in use by services ns/x, ns/y (cannot share: with externalTrafficPolicy Local, services sharing an address must select the same pods)"),
			fails(mkReq("z", want("10.0.1.0"), share("k", "UDP/53", "TCP/443")), ErrRequestedIPInUse,
				"requested IP 10.0.1.0 is in use by services ns/x, ns/y (cannot share: both use TCP/443)"),
			alloc(mkReq("z", want("10.0.1.0"), share("k", "UDP/80")), asg("b", "10.0.1.0")),
		},
	}})
}

func TestAllocateInvalidRequests(t *testing.T) {
	pools := []Pool{mkPool("a", []string{"10.0.0.0/30", "fe80::/126"})}
	bad := func(r Request, msg string) step { return fails(r, ErrInvalidRequest, msg) }
	runScenarios(t, []scenario{{
		name:  "invalid requests",
		pools: pools,
		steps: []step{
			bad(Request{Service: ServiceKey{Namespace: "ns"}, Primary: IPv4}, "service name is empty"),
			bad(Request{Service: svc("x")}, "service ns/x has no IP family"),
			bad(Request{Service: svc("x"), Primary: IPv4, Policy: 7}, "service ns/x has an unknown IP family policy"),
			bad(Request{Service: svc("x"), Primary: IPv4, RequestedIPs: []netip.Addr{{}}}, "requested IP is not a valid address"),
			bad(mkReq("x", v6, want("fe80::1%eth0")), "requested IP fe80::1%eth0 has an IPv6 zone"),
			bad(mkReq("x", want("::ffff:10.0.0.1")), "requested IP ::ffff:10.0.0.1 is an IPv4-mapped IPv6 address; use plain IPv4"),
		},
	}})
}

// TestAllocateAgainOwnsItsRequest decides a Service again under requests
// equal to the one it holds by, which the book takes over without a copy:
// what the caller does with its slices afterwards must not reach the book,
// and a nil list must stay nil (a record renders it as null, an empty one
// as []).
func TestAllocateAgainOwnsItsRequest(t *testing.T) {
	tcp80 := []Port{{Protocol: "TCP", Port: 80}}
	tests := []struct {
		name        string
		first, then []Port
		want        []Port
	}{
		{"equal ports", tcp80, []Port{{Protocol: "TCP", Port: 80}}, tcp80},
		{"empty then nil", []Port{}, nil, nil},
		{"nil then empty", nil, []Port{}, []Port{}},
		{"unsorted", []Port{{Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 53}},
			[]Port{{Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 53}},
			[]Port{{Protocol: "TCP", Port: 53}, {Protocol: "TCP", Port: 80}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mkPool("a", slash30)
			b := mustBook(t, p)
			req := withAllEligible([]Pool{p}, mkReq("x"))
			req.Ports = tt.first
			if _, err := b.Allocate(req); err != nil {
				t.Fatal(err)
			}
			again := req
			again.Ports = slices.Clone(tt.then)
			again.EligiblePools = slices.Clone(req.EligiblePools)
			got, err := b.Allocate(again)
			if err != nil {
				t.Fatal(err)
			}
			if want := []netip.Addr{netip.MustParseAddr("10.0.0.0")}; !slices.Equal(got.Addrs, want) {
				t.Fatalf("second Allocate gave %v, want %v", got.Addrs, want)
			}
			for i := range again.Ports {
				again.Ports[i].Port = 9999
			}
			for i := range again.EligiblePools {
				again.EligiblePools[i] = "gone"
			}
			_, ports, _ := b.Terms(req.Service)
			if (ports == nil) != (tt.want == nil) || !slices.Equal(ports, tt.want) {
				t.Errorf("the book holds ports %#v, want %#v", ports, tt.want)
			}
			if !b.Holds(req.Service) || !b.eligibleHeld(req.Service, "a") {
				t.Errorf("the book lost its eligible pools after the caller wrote to its own")
			}
		})
	}
}
