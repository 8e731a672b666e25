package controller

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
)

// checkKept fails for every Service in want whose addresses changed or that
// was written at all (its resourceVersion moved).
func checkKept(t *testing.T, want, got map[string]observed) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		if g.ips != w.ips {
			t.Errorf("service %s moved from %q to %q", name, w.ips, g.ips)
		}
		if g.resourceVersion != w.resourceVersion {
			t.Errorf("service %s was written (resourceVersion %s -> %s)", name, w.resourceVersion, g.resourceVersion)
		}
	}
}

// TestRestartFullPool is the OCPBUGS-16267 situation: a full pool, assigned
// Services, and more pending Services than free addresses, across five
// SIGKILL restarts. No assigned Service moves or is even written; pending
// ones stay pending; an address freed while the controller is down goes to
// the oldest pending Service.
func TestRestartFullPool(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "full", ns, "198.51.100.0/29")
	p := startController(t)

	assigned := fixture.Services(t, ns, "held", 8)
	before := waitSettled(t, ns, assigned...)
	checkUnique(t, before)

	var pending []string
	for round := 1; round <= 5; round++ {
		p.Kill()
		pending = append(pending, fixture.Services(t, ns, fmt.Sprintf("wait-%d", round), 2)...)
		freed := ""
		if round == 3 {
			freed = before["held-5"].ips
			if err := kube().Delete(t.Context(), serviceRef(ns, "held-5")); err != nil {
				t.Fatalf("delete held-5: %v", err)
			}
			delete(before, "held-5")
		}
		p = startController(t)
		got := waitSettled(t, ns, pending...)
		checkUnique(t, got)
		if freed != "" {
			// wait-1-0 is the oldest pending Service: it, and only it,
			// changes.
			if got["wait-1-0"].ips != freed {
				t.Fatalf("round %d: freed %s went to %+v, want wait-1-0", round, freed, got)
			}
			before["wait-1-0"] = got["wait-1-0"]
		}
		checkKept(t, before, got)
		for _, name := range pending {
			if _, ok := before[name]; ok {
				continue
			}
			if got[name].ips != "" || got[name].reason != assign.ReasonPoolExhausted {
				t.Errorf("round %d: pending %s = %+v, want no address and PoolExhausted", round, name, got[name])
			}
		}
		// A pending Service is written once, when it is first told why it
		// has no address; after that it is settled like the others.
		for _, name := range pending {
			before[name] = got[name]
		}
	}
}

// TestRestartWithDuplicatesInStatus starts the controller on statuses that
// another implementation left with one address on three Services: the
// oldest keeps it, untouched, and the others are re-served.
func TestRestartWithDuplicatesInStatus(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "dups", ns, "203.0.113.0/30")
	p := startController(t)
	fixture.Service(t, ns, "a-holder")
	before := waitSettled(t, ns, "a-holder")
	if before["a-holder"].ips != "203.0.113.0" {
		t.Fatalf("a-holder = %+v, want 203.0.113.0", before["a-holder"])
	}
	p.Kill()

	for _, name := range []string{"b-copy", "c-copy"} {
		svc := fixture.Service(t, ns, name)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.0"}}
		if err := kube().Status().Update(t.Context(), svc); err != nil {
			t.Fatalf("write duplicate status on %s: %v", name, err)
		}
	}
	startController(t)
	var got map[string]observed
	fixture.WaitFor(t, "duplicates to be re-served", func() bool {
		got = observe(t, ns)
		return got["b-copy"].ips == "203.0.113.1" && got["c-copy"].ips == "203.0.113.2"
	})
	checkUnique(t, got)
	checkKept(t, map[string]observed{"a-holder": before["a-holder"]}, got)
}

// TestRestartWhilePoolChanged shrinks a pool while the controller is down:
// Services in the remaining range keep their addresses untouched, those in
// the removed range get new ones from the added range.
func TestRestartWhilePoolChanged(t *testing.T) {
	ns := fixture.Namespace(t)
	pool := fixture.Pool(t, "shrink", ns, "203.0.113.16/30", "203.0.113.20/30")
	p := startController(t)
	all := fixture.Services(t, ns, "s", 6)
	before := waitSettled(t, ns, all...)
	p.Kill()

	// The controller wrote the pool's status: start from the latest version.
	if err := kube().Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
		t.Fatalf("get pool: %v", err)
	}
	pool.Spec.Addresses = []string{"203.0.113.16/30", "203.0.113.24/30"}
	if err := kube().Update(t.Context(), pool); err != nil {
		t.Fatalf("update pool: %v", err)
	}
	startController(t)
	var got map[string]observed
	fixture.WaitFor(t, "services in the removed range to be re-served", func() bool {
		got = observe(t, ns)
		return got["s-4"].ips == "203.0.113.24" && got["s-5"].ips == "203.0.113.25"
	})
	checkUnique(t, got)
	kept := map[string]observed{}
	for _, name := range all[:4] {
		kept[name] = before[name]
	}
	checkKept(t, kept, got)
}
