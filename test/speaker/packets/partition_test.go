package packets

import (
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
