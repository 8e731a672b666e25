package packets

import (
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/lab"
)

// TestReturningLinkNeverOverlaps: the owner's link is cut (a pulled cable:
// its speaker keeps running, and still reaches the API server, but hears
// no peer and no client); another node takes the address over. When the
// link comes back, the address returns to its owner, and no request is
// ever answered by two nodes, although for a moment both believe they own
// it.
//
// Known to fail today, so it runs only with STEADYLB_KNOWN_ISSUES=1: the
// cut node, alone in its membership view, keeps answering; the node that
// took over answers too; when the link returns both answer for a few
// hundred milliseconds, until one of them hears that the other is alive
// (gossip's refutation round trip). While cut, each node deletes the
// other's ServiceL2Status as a departed member's and neither writes its own
// again, so the returning owner answers with no object at all.
func TestReturningLinkNeverOverlaps(t *testing.T) {
	if os.Getenv("STEADYLB_KNOWN_ISSUES") == "" {
		t.Skip("known issue: a node returning from a link cut answers together with the node that took over; set STEADYLB_KNOWN_ISSUES=1 to run")
	}
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
			c.waitStatus(key, home, lab.SegmentA, lab.SegmentB)
		})
	}
}
