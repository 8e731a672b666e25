package speaker

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/fixture"
)

// TestHandoverOrder moves one address between three speakers in every way
// a handover happens and checks the journal: the old owner's Announce
// without the address comes before the new owner's Announce with it. The
// fake announcers also check, at every start, that no other node answers
// the address and that no other live node still holds an object for it
// (the lab fails the test otherwise).
func TestHandoverOrder(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.112/28"})
	const addr = "198.51.100.113"
	a := mustAddr(addr)
	key := l.service("web", []string{addr}, nil)
	owner := l.owner(addr, "a", "b", "c")
	l.waitAnswered(addr, owner)
	l.waitStatusNodes(key, owner)
	var others []string
	for _, n := range []string{"a", "b", "c"} {
		if n != owner {
			others = append(others, n)
		}
	}
	next := l.owner(addr, others...)

	// checkOrder: since mark, from stops answering before to starts.
	checkOrder := func(t *testing.T, mark int, from, to string) {
		t.Helper()
		stop := l.journal.firstCall(mark, l.node(from), a, false)
		start := l.journal.firstCall(mark, l.node(to), a, true)
		if stop < 0 || start < 0 || stop > start {
			t.Errorf("journal since %d: %s stopped at call %d, %s started at call %d; want the stop first", mark, from, stop, to, start)
		}
	}

	t.Run("the owner becomes ineligible", func(t *testing.T) {
		mark := l.journal.length()
		l.labelNode(owner, corev1.LabelNodeExcludeBalancers, ptr.To("true"))
		l.waitAnswered(addr, next)
		l.waitStatusNodes(key, next)
		checkOrder(t, mark, owner, next)
	})
	t.Run("it becomes eligible again and gets the address back", func(t *testing.T) {
		mark := l.journal.length()
		l.labelNode(owner, corev1.LabelNodeExcludeBalancers, nil)
		l.waitAnswered(addr, owner)
		l.waitStatusNodes(key, owner)
		checkOrder(t, mark, next, owner)
	})
	t.Run("the owner's speaker stops and leaves the membership", func(t *testing.T) {
		mark := l.journal.length()
		l.stop(owner)
		l.live(others...)
		l.waitAnswered(addr, next)
		l.waitStatusNodes(key, next)
		checkOrder(t, mark, owner, next)
	})
	t.Run("it comes back, and takes over only after the current owner let go", func(t *testing.T) {
		mark := l.journal.length()
		l.start(owner)
		l.live("a", "b", "c")
		l.waitAnswered(addr, owner)
		l.waitStatusNodes(key, owner)
		checkOrder(t, mark, next, owner)
	})
}

// TestStartGraceRunsOutWithoutAnElection: the start grace of a node that
// is elected for nothing still begins once it has found the others, so
// that a later failover to it does not wait the grace out. Node c is
// excluded from every pool, so no round of its own ever elects it.
func TestStartGraceRunsOutWithoutAnElection(t *testing.T) {
	l := newLab(t, "a", "b")
	l.createNode("c", map[string]string{corev1.LabelNodeExcludeBalancers: ""})
	l.live("a", "b", "c")
	c := l.start("c")
	fixture.WaitFor(t, "c's start grace to run out", func() bool {
		select {
		case <-c.speaker.SettledIn():
			return true
		default:
			return false
		}
	})
	if v, _ := c.gauge("steadylb_speaker_start_grace", nil); v != 0 {
		t.Errorf("after the grace: steadylb_speaker_start_grace = %v, want 0", v)
	}
}

// TestDeclaredDeadStartsOver: a node told that another member declared it
// dead (it was frozen or cut off, and the others may have taken its
// addresses over) stops answering every address at once, and answers its
// own again, with their objects, once the grace has passed.
func TestDeclaredDeadStartsOver(t *testing.T) {
	l := newLab(t, "a", "b")
	l.pool("lan", []string{"198.51.100.160/28"})
	const addr = "198.51.100.161"
	key := l.service("web", []string{addr}, nil)
	owner := l.owner(addr, "a", "b")
	l.waitAnswered(addr, owner)
	l.waitStatusNodes(key, owner)

	mark := l.journal.length()
	l.speakers[owner].view.declareDead()
	fixture.WaitFor(t, owner+" to stop answering every address", func() bool {
		return l.journal.firstSilence(mark, l.node(owner)) >= 0
	})
	l.waitAnswered(addr, owner)
	l.waitStatusNodes(key, owner)
	if v, _ := l.speakers[owner].gauge("steadylb_speaker_fences_total", nil); v != 1 {
		t.Errorf("steadylb_speaker_fences_total = %v, want 1", v)
	}
}

// TestDeclaredDeadWithinTheFirstGraceStartsOver: a speaker restarted on a
// node and declared dead within its first grace (starved while it
// starts: a declaration names the current process's fence token, so it is
// never about the previous one) starts its grace over like any other: the
// node that answered meanwhile goes on answering until it sees this one
// alive again, and a grace that went on would end with both answering.
// It takes its address back after the new grace and counts the fence.
func TestDeclaredDeadWithinTheFirstGraceStartsOver(t *testing.T) {
	l := newLab(t, "a", "b")
	l.pool("lan", []string{"198.51.100.240/28"})
	const addr = "198.51.100.241"
	key := l.service("web", []string{addr}, nil)
	owner := l.owner(addr, "a", "b")
	l.waitAnswered(addr, owner)

	other := slices.DeleteFunc([]string{"a", "b"}, func(n string) bool { return n == owner })[0]
	l.stop(owner)
	l.live(other)
	l.waitAnswered(addr, other)
	l.live("a", "b")
	r := l.start(owner)
	select {
	case <-r.speaker.SettledIn():
		t.Fatal("the restarted speaker's first grace was over before the test could declare it dead")
	default:
	}
	if v, _ := r.gauge("steadylb_speaker_start_grace", nil); v != 1 {
		t.Errorf("within the first grace: steadylb_speaker_start_grace = %v, want 1", v)
	}
	r.view.declareDead()
	fixture.WaitFor(t, "the restarted speaker to count a fence", func() bool {
		v, _ := r.gauge("steadylb_speaker_fences_total", nil)
		return v == 1
	})
	l.waitAnswered(addr, owner)
	l.waitStatusNodes(key, owner)
	if v, _ := r.gauge("steadylb_speaker_start_grace", nil); v != 0 {
		t.Errorf("answering again: steadylb_speaker_start_grace = %v, want 0", v)
	}
}

// TestDepartedNodeObjectsDoNotBlock: an object left by a node that is not
// live (killed: it could not clean up) blocks nothing, and the new owner
// deletes it.
func TestDepartedNodeObjectsDoNotBlock(t *testing.T) {
	l := newLab(t, "a")
	l.pool("lan", []string{"198.51.100.128/28"})
	const addr = "198.51.100.129"
	key := l.service("web", []string{addr}, nil)
	l.waitAnswered(addr, "a")
	// A node that died without cleaning up, and MetalLB's object, which
	// lists no addresses.
	ours := l.createStatus(l.id+"-gone", key, addr)
	theirs := l.createStatus(l.id+"-metallb", key)
	fixture.WaitFor(t, "the departed nodes' objects to be deleted", func() bool {
		return !exists(ours) && !exists(theirs)
	})
	l.waitAnswered(addr, "a")
	l.waitStatusNodes(key, "a")
}

// TestLiveHolderBlocks: while another live node holds an object guarding
// the address, the elected node does not answer; once it is gone, it does.
func TestLiveHolderBlocks(t *testing.T) {
	l := newLab(t, "a", "b")
	l.pool("lan", []string{"198.51.100.144/28"})
	const addr = "198.51.100.145"
	owner := l.owner(addr, "a", "b")
	other := "a"
	if owner == "a" {
		other = "b"
	}
	svc := fixture.Service(t, l.ns, "web")
	key := client.ObjectKeyFromObject(svc)
	// The other node "answered" the address before this test's owner saw
	// it: its object is in place before the Service shows the address.
	blocker := l.createStatus(l.node(other), key, addr)
	l.showAddresses(key, addr)
	l.endpoints(key, ready()...)
	l.settle()
	if got := l.journal.answerers(mustAddr(addr)); len(got) != 0 {
		t.Fatalf("%s answered by %v while live %s holds an object for it", addr, got, other)
	}
	if err := kube().Delete(ctx, blocker); err != nil {
		t.Fatalf("delete the blocking object: %v", err)
	}
	l.waitAnswered(addr, owner)
	l.waitStatusNodes(key, owner)
}

// TestDeletedObjectIsWrittenAgain: an object of the answering node that
// someone else deletes (a node that took over while this one was thought
// dead, or a user) is written again while the node still answers, so the
// objects keep saying who answers.
func TestDeletedObjectIsWrittenAgain(t *testing.T) {
	l := newLab(t, "a")
	l.pool("lan", []string{"198.51.100.160/28"})
	const addr = "198.51.100.161"
	key := l.service("web", []string{addr}, nil)
	l.waitAnswered(addr, "a")
	l.waitStatusNodes(key, "a")
	first := l.statuses(key)[0]
	if err := kube().Delete(ctx, &first); err != nil {
		t.Fatalf("delete the owner's object: %v", err)
	}
	fixture.WaitFor(t, "a new ServiceL2Status from the owner", func() bool {
		now := l.statuses(key)
		return len(now) == 1 && now[0].UID != first.UID && l.statusNodes(key)[0] == l.node("a")
	})
	l.waitAnswered(addr, "a")
}
