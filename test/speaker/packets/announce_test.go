package packets

import (
	"net/netip"
	"testing"

	"github.com/steadylb/steadylb/test/lab"
)

// TestOneNodeAnswers: for an IPv4 and an IPv6 address of one Service, one
// node answers ARP and NDP on segment a, the one carrying the node's
// address (the addresses are on none of its subnets), with its MAC, and
// no other node answers any request; nothing answers on segment b, where
// the nodes have no address; its ServiceL2Status is the only one and
// names segment a's interface.
func TestOneNodeAnswers(t *testing.T) {
	c := newCluster(t)
	v4, v6 := netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("2001:db8:200::10")
	c.advertise("one", []string{"203.0.113.10/32", "2001:db8:200::10/128"})
	key := c.service("one", []string{v4.String(), v6.String()}, c.lab.Nodes)

	for _, addr := range []netip.Addr{v4, v6} {
		owner := c.owner(addr)
		c.assertOnly(lab.SegmentA, addr, owner, 5)
		c.assertNobody(lab.SegmentB, addr, 5)
	}
	// The two addresses are elected one by one; the Service's objects are
	// those of the owners of its addresses.
	o4, o6 := c.owner(v4), c.owner(v6)
	c.waitFor("a ServiceL2Status for each owner and no other", func() bool {
		got := c.statuses(key)
		_, has4 := got[o4.Name]
		_, has6 := got[o6.Name]
		return has4 && has6 && len(got) == map[bool]int{true: 1, false: 2}[o4 == o6]
	})
	for node, st := range c.statuses(key) {
		var ifnames []string
		for _, i := range st.Status.Interfaces {
			ifnames = append(ifnames, i.Name)
		}
		if len(ifnames) != 1 || ifnames[0] != lab.SegmentA {
			t.Errorf("ServiceL2Status of %s lists interfaces %v, want [%s]", node, ifnames, lab.SegmentA)
		}
	}
}
