package ipam

import "testing"

// TestRetain covers make before break when the new request cannot be
// served: what the request still allows stays, re-termed; the rest is
// given up.
func TestRetain(t *testing.T) {
	one := []Pool{mkPool("a", []string{"10.0.0.0/31"}), mkPool("b", []string{"10.0.1.0/32"})}
	runScenarios(t, []scenario{{
		name:  "a requested IP in use keeps the old address",
		pools: one,
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("y"), asg("a", "10.0.0.1")),
			retains(mkReq("x", want("10.0.0.1")), ErrRequestedIPInUse, asg("a", "10.0.0.0")),
		},
	}, {
		name:  "a new key on a shared address loses it; the other holder stays",
		pools: one,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			retains(mkReq("y", share("k2", "TCP/443"), want("10.0.0.0")), ErrRequestedIPInUse, Assignment{}),
			step{holds: map[ServiceKey]Assignment{svc("x"): asg("a", "10.0.0.0"), svc("y"): {}}},
		},
	}, {
		name:  "a port that now overlaps loses the shared address",
		pools: one,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			retains(mkReq("y", share("k", "TCP/443", "TCP/80"), want("10.0.0.0")), ErrRequestedIPInUse, Assignment{}),
		},
	}, {
		name:  "kept under the new ports: a joiner on them is refused",
		pools: one,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y"), asg("a", "10.0.0.1")),
			// x asks for y's address, which fails, and now also uses 443.
			retains(mkReq("x", share("k", "TCP/80", "TCP/443"), want("10.0.0.1")), ErrRequestedIPInUse, asg("a", "10.0.0.0")),
			fails(mkReq("z", share("k", "TCP/443"), want("10.0.0.0")), ErrRequestedIPInUse,
				"requested IP 10.0.0.0 is in use by service ns/x (cannot share: both use TCP/443)"),
		},
	}, {
		name:  "a pinned pool that does not exist gives everything up",
		pools: one,
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			retains(mkReq("x", pinned("gone")), ErrNoMatchingPool, Assignment{}),
		},
	}, {
		name:  "a full pinned pool elsewhere gives up the address in the old pool",
		pools: one,
		steps: []step{
			alloc(mkReq("w", pinned("b")), asg("b", "10.0.1.0")),
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			retains(mkReq("x", pinned("b")), ErrPoolExhausted, Assignment{}),
		},
	}, {
		name:  "the pool no longer admits the service",
		pools: one,
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			retains(mkReq("x", eligible("b"), want("10.0.0.1")), ErrNoMatchingPool, Assignment{}),
		},
	}})
}

// TestGivenUpAddressesWaitForSettle: an address a Service gave up stays
// reserved until the API server confirms the write (Settle), so a failed
// write can never leave it on two Services.
func TestGivenUpAddressesWaitForSettle(t *testing.T) {
	pools := []Pool{mkPool("a", []string{"10.0.0.0/30"}), mkPool("b", []string{"10.0.1.0/31"})}
	runScenarios(t, []scenario{{
		name:  "a move keeps the old address reserved until settled",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", pinned("a")), asg("a", "10.0.0.0")),
			allocPending(mkReq("x", pinned("b")), asg("b", "10.0.1.0")),
			alloc(mkReq("y", pinned("a")), asg("a", "10.0.0.1")),
			fails(mkReq("z", want("10.0.0.0")), ErrRequestedIPInUse,
				"requested IP 10.0.0.0 is in use by service ns/x (cannot share: the address is being released and the API server has not confirmed it yet)"),
			settle("x"),
			alloc(mkReq("z", want("10.0.0.0")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "a shared address given up takes no new holder until settled",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", pinned("a"), share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", pinned("a"), share("k", "TCP/443")), asg("a", "10.0.0.0")),
			allocPending(mkReq("y", pinned("b"), share("k", "TCP/443")), asg("b", "10.0.1.0")),
			alloc(mkReq("z", pinned("a"), share("k", "TCP/443")), asg("a", "10.0.0.1")),
			settle("y"),
			alloc(mkReq("w", pinned("a"), share("k", "TCP/443")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "a given-up address is not handed out again, not even to its Service",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", pinned("a")), asg("a", "10.0.0.0")),
			allocPending(mkReq("x", pinned("b")), asg("b", "10.0.1.0")),
			allocPending(mkReq("x", pinned("a")), asg("a", "10.0.0.1")),
			settle("x"),
			alloc(mkReq("y", pinned("b")), asg("b", "10.0.1.0")),
			alloc(mkReq("z", pinned("a")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "release frees given-up addresses too",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", pinned("a")), asg("a", "10.0.0.0")),
			allocPending(mkReq("x", pinned("b")), asg("b", "10.0.1.0")),
			release("x"),
			alloc(mkReq("y", want("10.0.0.0")), asg("a", "10.0.0.0")),
			alloc(mkReq("z", pinned("b")), asg("b", "10.0.1.0")),
		},
	}})
}
