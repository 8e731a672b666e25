package controller

import (
	"strings"
	"testing"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/test/fixture"
)

// barrierOpen is what a controller logs when its startup barrier opens;
// only the replica that holds the Lease gets there.
const barrierOpen = "startup barrier open"

// TestLeaderHandover runs two replicas with leader election, kills the
// leader with SIGKILL, creates Services while no one leads, and checks that
// the standby takes over through its own startup barrier: no holder is
// written or moved, nothing is held twice, and the new Services are served.
func TestLeaderHandover(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "handover", ns, "192.0.2.48/29")
	election := []string{"--leader-elect", "--leader-election-id", "handover-" + ns,
		// Short timings so that a standby takes over a killed leader's
		// Lease within a few seconds.
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
		"--leader-elect-retry-period", "250ms"}
	// A standby reports ready: both start.
	first := startController(t, election...)
	second := startController(t, election...)

	held := fixture.Services(t, ns, "held", 5)
	before := waitSettled(t, ns, held...)
	checkUnique(t, before)
	leader, standby := first, second
	fixture.WaitFor(t, "one replica to lead", func() bool {
		return strings.Contains(first.Output(), barrierOpen) || strings.Contains(second.Output(), barrierOpen)
	})
	if strings.Contains(second.Output(), barrierOpen) {
		leader, standby = second, first
	}
	if strings.Contains(standby.Output(), barrierOpen) {
		t.Fatal("both replicas opened their startup barrier: two leaders")
	}

	leader.Kill()
	fixture.Service(t, ns, "during-1")
	fixture.Service(t, ns, "during-2")
	fixture.WaitFor(t, "the standby to take over", func() bool { return strings.Contains(standby.Output(), barrierOpen) })
	got := waitSettled(t, ns, "during-1", "during-2")
	checkUnique(t, got)
	checkKept(t, before, got)
	if got["during-1"].ips == "" || got["during-2"].ips == "" {
		t.Errorf("services created during the handover: %+v, %+v; want both served", got["during-1"], got["during-2"])
	}
}

// TestRetentionAcrossHandover: a deleted Service's address, retained with
// the --retain-for flag, stays retained when the leader dies: the new
// leader gives it to nobody else, and to the Service when it is back.
func TestRetentionAcrossHandover(t *testing.T) {
	ns := fixture.Namespace(t)
	fixture.Pool(t, "retain-handover", ns, "192.0.2.96/29")
	election := []string{"--leader-elect", "--leader-election-id", "retain-" + ns, "--retain-for", "1h",
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "250ms"}
	first := startController(t, election...)
	second := startController(t, election...)
	fixture.Services(t, ns, "s", 3)
	before := waitSettled(t, ns, "s-0", "s-1", "s-2")
	if err := kube().Delete(ctx, serviceRef(ns, "s-1")); err != nil {
		t.Fatalf("delete s-1: %v", err)
	}
	waitReservation(t, ns, "retained-s-1", v1alpha1.ReasonWaitingForService)

	leader, standby := first, second
	fixture.WaitFor(t, "one replica to lead", func() bool {
		return strings.Contains(first.Output(), barrierOpen) || strings.Contains(second.Output(), barrierOpen)
	})
	if strings.Contains(second.Output(), barrierOpen) {
		leader, standby = second, first
	}
	leader.Kill()
	fixture.Service(t, ns, "newcomer")
	fixture.WaitFor(t, "the standby to take over", func() bool { return strings.Contains(standby.Output(), barrierOpen) })
	got := waitSettled(t, ns, "newcomer")
	if got["newcomer"].ips == "" || got["newcomer"].ips == before["s-1"].ips {
		t.Fatalf("newcomer = %+v, want an address other than the retained %s", got["newcomer"], before["s-1"].ips)
	}
	fixture.Service(t, ns, "s-1")
	got = waitSettled(t, ns, "s-1")
	if got["s-1"].ips != before["s-1"].ips {
		t.Errorf("s-1 came back on %q, want its retained %s", got["s-1"].ips, before["s-1"].ips)
	}
	checkUnique(t, got)
}
