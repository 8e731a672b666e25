package packets

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/lab"
)

// TestInterfaceRestriction: an L2Advertisement that lists interfaces
// answers on those only. Listing one the nodes lack is reported in each
// node's ConfigurationState, and the listed interface that exists keeps
// answering. When the missing interface appears on a node, that node
// answers on it too and its object and ConfigurationState say so.
func TestInterfaceRestriction(t *testing.T) {
	c := newCluster(t)
	v4, v6 := netip.MustParseAddr("203.0.113.20"), netip.MustParseAddr("2001:db8:200::20")
	c.advertise("restricted", []string{"203.0.113.20/32", "2001:db8:200::20/128"}, func(s *v1beta1.L2AdvertisementSpec) {
		s.Interfaces = []string{lab.SegmentB, "nosuch0"}
	})
	key := c.service("restricted", []string{v4.String(), v6.String()}, c.lab.Nodes)

	for _, addr := range []netip.Addr{v4, v6} {
		var owner *lab.Node
		c.waitFor("one node to answer for "+addr.String()+" on "+lab.SegmentB, func() bool {
			got := c.ask(lab.SegmentB, addr)
			if len(got) == 1 {
				owner = got[0]
			}
			return len(got) == 1
		})
		c.assertOnly(lab.SegmentB, addr, owner, 3)
		c.assertNobody(lab.SegmentA, addr, 3)
	}
	c.waitFor("every ServiceL2Status to list only "+lab.SegmentB, func() bool {
		got := c.statuses(key)
		if len(got) == 0 {
			return false
		}
		for _, st := range got {
			if len(st.Status.Interfaces) != 1 || st.Status.Interfaces[0].Name != lab.SegmentB {
				return false
			}
		}
		return true
	})
	// Only a node that answers for an address learns the interface is
	// missing, from its announcer.
	for node := range c.statuses(key) {
		c.waitFor("ConfigurationState of "+node+" to report nosuch0", func() bool {
			var st v1beta1.ConfigurationState
			if err := kube().Get(context.Background(), types.NamespacedName{Namespace: c.lab.Namespace(), Name: "speaker-" + node}, &st); err != nil {
				return false
			}
			return st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, `"nosuch0"`)
		})
	}
	c.interfaceAppears(key, "nosuch0")
}

// interfaceAppears adds the interface ifname to a node that answers for
// the Service and waits for its ServiceL2Status to list it and for its
// ConfigurationState to stop reporting it missing. Nothing else changes
// then, so only the announcer's rescan can bring that about.
func (c *cluster) interfaceAppears(key types.NamespacedName, ifname string) {
	c.t.Helper()
	var node *lab.Node
	for name := range c.statuses(key) {
		node = c.lab.Node(name)
		break
	}
	if node == nil {
		c.t.Fatalf("no node answers for %s", key)
	}
	// A veth pair inside the node: the kernels CI runs on may lack the
	// dummy driver. Deleting one end deletes both.
	node.NS.IP(c.t, "link", "add", ifname, "type", "veth", "peer", "name", ifname+"p")
	c.t.Cleanup(func() { _, _ = node.NS.Exec("link", "del", ifname) })
	node.NS.IP(c.t, "link", "set", ifname+"p", "up")
	node.NS.IP(c.t, "link", "set", ifname, "up")
	want := []string{ifname, lab.SegmentB}
	slices.Sort(want)
	c.waitFor("the ServiceL2Status of "+node.Name+" to list "+strings.Join(want, ", "), func() bool {
		st, ok := c.statuses(key)[node.Name]
		var got []string
		for _, i := range st.Status.Interfaces {
			got = append(got, i.Name)
		}
		slices.Sort(got)
		return ok && slices.Equal(got, want)
	})
	c.waitFor("ConfigurationState of "+node.Name+" to stop reporting "+ifname, func() bool {
		var st v1beta1.ConfigurationState
		if err := kube().Get(context.Background(), types.NamespacedName{Namespace: c.lab.Namespace(), Name: "speaker-" + node.Name}, &st); err != nil {
			return false
		}
		return !strings.Contains(st.Status.ErrorSummary, ifname)
	})
}
