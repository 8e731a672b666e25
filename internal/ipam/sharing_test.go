package ipam

import "testing"

func TestAllocateSharing(t *testing.T) {
	pools := []Pool{mkPool("a", slash30)}
	runScenarios(t, []scenario{{
		name:  "compatible services share the lowest address",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			alloc(mkReq("z", share("k", "TCP/80")), asg("a", "10.0.0.1")),
			alloc(mkReq("w", share("k", "UDP/80")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "TCP/53 and UDP/53 share",
		pools: pools,
		steps: []step{
			alloc(mkReq("tcp", share("dns", "TCP/53")), asg("a", "10.0.0.0")),
			alloc(mkReq("udp", share("dns", "UDP/53")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "different keys do not share",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", share("k1", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k2", "TCP/443")), asg("a", "10.0.0.1")),
		},
	}, {
		name:  "backend keys must match",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80"), backend("app=a")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443"), backend("app=b")), asg("a", "10.0.0.1")),
			alloc(mkReq("z", share("k", "TCP/8080"), backend("app=a")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "no sharing key never shares",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", share("", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("", "TCP/443")), asg("a", "10.0.0.1")),
		},
	}, {
		name:  "a free address below the shared one wins",
		pools: pools,
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/80")), asg("a", "10.0.0.1")),
			release("x"),
			alloc(mkReq("z", share("k", "TCP/443")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "a shared address below the free ones wins",
		pools: pools,
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y"), asg("a", "10.0.0.1")),
			alloc(mkReq("z", share("k", "TCP/443")), asg("a", "10.0.0.0")),
		},
	}, {
		name:  "range order applies to shared addresses too",
		pools: []Pool{mkPool("a", []string{"10.0.1.0/32", "10.0.0.0/31"})},
		steps: []step{
			alloc(mkReq("x"), asg("a", "10.0.1.0")),
			alloc(mkReq("y", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			release("x"),
			alloc(mkReq("z", share("k", "TCP/443")), asg("a", "10.0.1.0")),
		},
	}, {
		name:  "a full pool still shares",
		pools: []Pool{mkPool("a", slash32)},
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			fails(mkReq("z", share("k", "TCP/80")), ErrPoolExhausted, `no available IPv4 addresses in pool "a"`),
		},
	}, {
		name:  "a shared address is freed with its last holder",
		pools: []Pool{mkPool("a", slash32)},
		steps: []step{
			alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
			alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
			release("x"),
			fails(mkReq("z"), ErrPoolExhausted, `no available IPv4 addresses in pool "a"`),
			release("y"),
			alloc(mkReq("z"), asg("a", "10.0.0.0")),
		},
	}})
}

func TestSharingStatsCountOnce(t *testing.T) {
	b := runSteps(t, []Pool{mkPool("a", slash30)}, []step{
		alloc(mkReq("x", share("k", "TCP/80")), asg("a", "10.0.0.0")),
		alloc(mkReq("y", share("k", "TCP/443")), asg("a", "10.0.0.0")),
	})
	st, _ := b.Stats("a")
	want := FamilyStats{Total: CountOf(4), Assigned: CountOf(1), Available: CountOf(3)}
	if d := diff(want, st.IPv4); d != "" {
		t.Errorf("IPv4 stats (-want +got):\n%s", d)
	}
	if d := diff([]ServiceKey{svc("x"), svc("y")}, b.Holders(ip("10.0.0.0"))); d != "" {
		t.Errorf("Holders (-want +got):\n%s", d)
	}
}
