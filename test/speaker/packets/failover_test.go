package packets

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/lab"
)

// failoverCase is one address of its own Service, so that its
// ServiceL2Status is the owner's alone.
type failoverCase struct {
	name     string
	addr     netip.Addr
	protocol string // of the announcement: "arp" or "ndp"
}

var failoverCases = []failoverCase{
	{"ipv4", netip.MustParseAddr("203.0.113.50"), "arp"},
	{"ipv6", netip.MustParseAddr("2001:db8:200::50"), "ndp"},
}

// failoverService advertises tc's address and shows it on a Service with
// an endpoint on every node.
func (c *cluster) failoverService(tc failoverCase) types.NamespacedName {
	c.t.Helper()
	bits := 32
	if tc.addr.Is6() {
		bits = 128
	}
	c.advertise("failover-"+tc.name, []string{netip.PrefixFrom(tc.addr, bits).String()})
	return c.service("failover-"+tc.name, []string{tc.addr.String()}, c.lab.Nodes)
}

// newOwner waits until a node other than old answers for addr and returns
// it.
func (c *cluster) newOwner(addr netip.Addr, old *lab.Node) *lab.Node {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := c.probe[lab.SegmentA].AwaitNewMAC(ctx, addr, old.MAC(lab.SegmentA), 20*time.Millisecond)
	if err != nil {
		c.t.Fatalf("waiting for a node other than %s to answer for %s: %v", old.Name, addr, err)
	}
	return c.nodeOf(a.MAC, lab.SegmentA)
}

// waitAnnounced waits for node's gratuitous ARP / unsolicited NA of addr.
func (c *cluster) waitAnnounced(l *l2probe.Listener, tc failoverCase, node *lab.Node) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mac := node.MAC(lab.SegmentA)
	a, err := l.Wait(ctx, func(a l2probe.Announcement) bool {
		return a.Addr == tc.addr && slices.Equal(a.MAC, mac) && a.Protocol == tc.protocol
	})
	if err != nil {
		c.t.Fatalf("no %s announcement of %s from %s: %v (heard %v)", tc.protocol, tc.addr, node.Name, err, l.Seen())
	}
	c.t.Logf("%s announced %s by %s", node.Name, tc.addr, a.Protocol)
}

// TestKillMovesAddress: when the owner's speaker is killed, another node
// answers for the address, and the client hears its gratuitous
// announcement; the new owner's ServiceL2Status replaces the dead one's.
func TestKillMovesAddress(t *testing.T) {
	c := newCluster(t)
	for _, tc := range failoverCases {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			key := c.failoverService(tc)
			old := c.owner(tc.addr)
			c.waitStatus(key, old, lab.SegmentA)
			heard := c.lab.Client.Listen(t, lab.SegmentA)

			c.speakers[old.Name].Kill()
			owner := c.newOwner(tc.addr, old)
			c.waitAnnounced(heard, tc, owner)
			c.assertOnly(lab.SegmentA, tc.addr, owner, 3)
			c.waitStatus(key, owner, lab.SegmentA)

			c.start(old) // for the next case
			c.waitMembers()
		})
	}
}

// TestTermHandsOverAtOnce: a speaker stopped with SIGTERM stops answering
// and leaves the membership before anything else, so its addresses move
// while it is still shutting down. To make "before" observable without a
// clock, the old owner's API server connection is cut first: its last
// step, deleting its ServiceL2Status objects, then hangs until its
// shutdown timeout, and the process is still running. A speaker that
// waited for those deletions, or left the membership only on exit, would
// hand over only after the process had gone (and failure detection had
// run), so the new owner would answer after the exit, not before.
func TestTermHandsOverAtOnce(t *testing.T) {
	c := newCluster(t)
	for _, tc := range failoverCases {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			key := c.failoverService(tc)
			old := c.owner(tc.addr)
			c.waitStatus(key, old, lab.SegmentA)
			heard := c.lab.Client.Listen(t, lab.SegmentA)
			stopWatching := c.watchOverlap(tc.addr)

			s := c.speakers[old.Name]
			old.CutAPI()
			t.Cleanup(old.RestoreAPI)
			if err := s.Term(); err != nil {
				t.Fatal(err)
			}
			owner := c.newOwner(tc.addr, old)
			if !s.Running() {
				t.Errorf("%s answered only after the old owner %s had exited: the handover waited for the shutdown", owner.Name, old.Name)
			}
			c.waitAnnounced(heard, tc, owner)
			stopWatching()
			c.assertOnly(lab.SegmentA, tc.addr, owner, 3)

			select {
			case <-s.Done:
			case <-time.After(time.Minute):
				t.Fatalf("the speaker on %s did not exit after SIGTERM", old.Name)
			}
			if err := s.Exited(); err != nil {
				t.Errorf("the speaker on %s exited with %v after SIGTERM, want a clean exit", old.Name, err)
			}
			old.RestoreAPI()
			// The new owner removed the departed node's object.
			c.waitStatus(key, owner, lab.SegmentA)

			c.start(old) // for the next case
			c.waitMembers()
		})
	}
}

// TestReturningNodeNeverOverlaps: ownership is computed, so a killed
// owner that comes back gets its address back; while it does, the client
// keeps asking, and no request is ever answered by two nodes.
func TestReturningNodeNeverOverlaps(t *testing.T) {
	c := newCluster(t)
	for _, tc := range failoverCases {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			key := c.failoverService(tc)
			home := c.owner(tc.addr)
			c.speakers[home.Name].Kill()
			away := c.newOwner(tc.addr, home)
			c.waitStatus(key, away, lab.SegmentA)

			heard := c.lab.Client.Listen(t, lab.SegmentA)
			stopWatching := c.watchOverlap(tc.addr)
			c.start(home)
			c.waitAnswer(lab.SegmentA, tc.addr, home)
			c.waitAnnounced(heard, tc, home)
			c.assertOnly(lab.SegmentA, tc.addr, home, 3)
			if asked := stopWatching(); asked < 3 {
				t.Errorf("only %d requests asked during the handback", asked)
			}
			c.waitStatus(key, home, lab.SegmentA)
			c.waitMembers()
		})
	}
}
