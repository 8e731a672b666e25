package packets

import (
	"syscall"
	"testing"

	"github.com/steadylb/steadylb/test/lab"
)

// TestReturningLinkNeverOverlaps: the owner's link is cut (a pulled cable:
// its speaker keeps running, and still reaches the API server, but hears
// no peer and no client); another node takes the address over. When the
// link comes back, the address returns to its owner, and no request is
// ever answered by two nodes, although for a moment both believe they own
// it: the returning node sees its carrier come back and answers nothing
// until the start grace has passed, by when the membership has healed and
// the handover runs as after a restart.
func TestReturningLinkNeverOverlaps(t *testing.T) {
	c := newCluster(t)
	for _, tc := range failoverCases {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			key := c.failoverService(tc)
			home := c.owner(tc.addr)
			if err := home.CutLink(lab.SegmentA); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = home.RestoreLink(lab.SegmentA) })
			away := c.newOwner(tc.addr, home)
			t.Logf("%s took %s over from %s", away.Name, tc.addr, home.Name)

			stopWatching := c.watchOverlap(tc.addr)
			if err := home.RestoreLink(lab.SegmentA); err != nil {
				t.Fatal(err)
			}
			c.waitMembers()
			c.waitAnswer(lab.SegmentA, tc.addr, home)
			c.assertOnly(lab.SegmentA, tc.addr, home, 3)
			stopWatching()
			c.waitStatus(key, home, lab.SegmentA)
		})
	}
}

// TestFrozenNodeNeverOverlaps: the owner's speaker is frozen (SIGSTOP)
// for 2 s, long enough to be declared dead; another node takes the
// address over. When it runs again, with the client's requests queued in
// its sockets and the others' decision unknown to it, it answers none of
// them: no request is ever answered by two nodes, and the address returns
// to it by the ordinary handover.
func TestFrozenNodeNeverOverlaps(t *testing.T) {
	c := newCluster(t)
	for _, tc := range failoverCases {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			key := c.failoverService(tc)
			home := c.owner(tc.addr)
			c.waitStatus(key, home, lab.SegmentA)
			s := c.speakers[home.Name]
			if err := syscall.Kill(s.Pid(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(s.Pid(), syscall.SIGCONT) })
			away := c.newOwner(tc.addr, home)
			t.Logf("%s took %s over from %s", away.Name, tc.addr, home.Name)
			// Requests for the address queue in the frozen node's socket.
			c.assertOnly(lab.SegmentA, tc.addr, away, 3)

			stopWatching := c.watchOverlap(tc.addr)
			if err := syscall.Kill(s.Pid(), syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			c.waitMembers()
			c.waitAnswer(lab.SegmentA, tc.addr, home)
			if asked := stopWatching(); asked < 3 {
				t.Errorf("only %d requests asked while the frozen node came back", asked)
			}
			c.waitStatus(key, home, lab.SegmentA)
		})
	}
}
