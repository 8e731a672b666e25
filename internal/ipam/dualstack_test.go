package ipam

import "testing"

func TestAllocateDualStack(t *testing.T) {
	v4a := mkPool("a", []string{"10.0.0.0/32"}, prio(1))
	dualB := mkPool("b", []string{"10.0.1.0/32", "2001:db8:1::/128"}, prio(2))
	v6c := mkPool("c", []string{"2001:db8:2::/128"}, prio(3))
	runScenarios(t, []scenario{{
		name:  "RequireDualStack takes a pool with both families",
		pools: []Pool{v4a, dualB},
		steps: []step{alloc(mkReq("x", require), asg("b", "10.0.1.0", "2001:db8:1::"))},
	}, {
		name:  "RequireDualStack without a dual pool",
		pools: []Pool{v4a, v6c},
		steps: []step{fails(mkReq("x", require), ErrNoMatchingPool, "no address pool available to this service has IPv4 and IPv6 addresses")},
	}, {
		name:  "RequireDualStack with the dual pool half full",
		pools: []Pool{v4a, dualB},
		steps: []step{
			alloc(mkReq("y", v6), asg("b", "2001:db8:1::")),
			fails(mkReq("x", require), ErrPoolExhausted, `no available IPv4 and IPv6 addresses in pool "b"`),
		},
	}, {
		name:  "PreferDualStack takes a dual pool even when it comes later",
		pools: []Pool{v4a, dualB},
		steps: []step{alloc(mkReq("x", prefer), asg("b", "10.0.1.0", "2001:db8:1::"))},
	}, {
		name:  "PreferDualStack falls back to the primary family",
		pools: []Pool{v4a, v6c},
		steps: []step{
			alloc(mkReq("x", prefer, v6), asg("c", "2001:db8:2::")),
			alloc(mkReq("y", prefer), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "PreferDualStack falls back to the secondary family",
		pools: []Pool{v4a, v6c},
		steps: []step{
			alloc(mkReq("y"), asg("a", "10.0.0.0")),
			alloc(mkReq("x", prefer), asg("c", "2001:db8:2::")),
		},
	}, {
		name:  "PreferDualStack in a half-full dual pool",
		pools: []Pool{dualB},
		steps: []step{
			alloc(mkReq("y"), asg("b", "10.0.1.0")),
			alloc(mkReq("x", prefer), asg("b", "2001:db8:1::")),
			fails(mkReq("z", prefer), ErrPoolExhausted, `no available IPv4 or IPv6 addresses in pool "b"`),
		},
	}, {
		name: "PreferDualStack stays in the first tier that has room",
		pools: []Pool{
			mkPool("sa", []string{"10.0.0.0/32"}, withSA),
			mkPool("plain", []string{"10.0.1.0/32", "2001:db8::/128"}),
		},
		steps: []step{alloc(mkReq("x", prefer), asg("sa", "10.0.0.0"))},
	}, {
		name:  "IPv6 primary single stack",
		pools: []Pool{dualB},
		steps: []step{alloc(mkReq("x", v6), asg("b", "2001:db8:1::"))},
	}})
}
