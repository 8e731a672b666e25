package packets

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/lab"
)

// watchOverlap asks for addrs on segment a, one sweep after another (see
// sweep) in a goroutine per address, until the returned stop is called; stop fails
// the test if any single request was answered by two nodes, and returns
// how many requests were sent.
func (c *cluster) watchOverlap(addrs ...netip.Addr) (stop func() int) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var asked atomic.Int64
	var mu sync.Mutex
	var problems []string
	for _, addr := range addrs {
		wg.Go(func() {
			for ctx.Err() == nil {
				got, err := c.sweep(ctx, []netip.Addr{addr}, askWindow)
				if err != nil {
					return // ctx ended
				}
				asked.Add(1)
				if answers := got[addr]; len(answers) > 1 {
					mu.Lock()
					problems = append(problems, addr.String()+" answered by "+answers[0].MAC.String()+" and "+answers[1].MAC.String()+
						" at "+answers[1].At.Format("15:04:05.000"))
					mu.Unlock()
				}
			}
		})
	}
	return func() int {
		c.t.Helper()
		cancel()
		wg.Wait()
		for _, p := range problems {
			c.t.Errorf("two nodes answered one request: %s", p)
		}
		return int(asked.Load())
	}
}

// TestLocalPolicyFollowsEndpoints: with externalTrafficPolicy Local, the
// node with the Service's endpoint answers; when the endpoint moves, the
// answer moves with it, never from two nodes at once; with no endpoint,
// nobody answers.
func TestLocalPolicyFollowsEndpoints(t *testing.T) {
	c := newCluster(t)
	v4, v6 := netip.MustParseAddr("203.0.113.30"), netip.MustParseAddr("2001:db8:200::30")
	c.advertise("local", []string{"203.0.113.30/32", "2001:db8:200::30/128"})
	n1, n2, n3 := c.lab.Nodes[0], c.lab.Nodes[1], c.lab.Nodes[2]
	key := c.service("local", []string{v4.String(), v6.String()}, []*lab.Node{n2}, localPolicy)

	for _, addr := range []netip.Addr{v4, v6} {
		c.waitAnswer(lab.SegmentA, addr, n2)
	}
	c.waitStatus(key, n2, lab.SegmentA)

	for _, to := range []*lab.Node{n3, n1} {
		stop := c.watchOverlap(v4, v6)
		c.moveEndpoints(key, to)
		for _, addr := range []netip.Addr{v4, v6} {
			c.waitAnswer(lab.SegmentA, addr, to)
		}
		stop()
		c.waitStatus(key, to, lab.SegmentA)
	}

	c.moveEndpoints(key)
	for _, addr := range []netip.Addr{v4, v6} {
		c.waitAnswer(lab.SegmentA, addr, nil)
	}
	c.waitStatus(key, nil)
}

// TestNodeSelectorsAndExcludeLabel: an L2Advertisement's node selector
// limits the nodes that may answer; a node labelled
// node.kubernetes.io/exclude-from-external-load-balancers stops answering
// and another eligible node takes over; removing the label gives the
// address back.
func TestNodeSelectorsAndExcludeLabel(t *testing.T) {
	c := newCluster(t)
	const zone = "lab.steadylb.io/zone"
	selected := c.lab.Nodes[1:]
	for _, n := range selected {
		c.label(n, zone, "a")
	}
	v4, v6 := netip.MustParseAddr("203.0.113.40"), netip.MustParseAddr("2001:db8:200::40")
	c.advertise("zoned", []string{"203.0.113.40/32", "2001:db8:200::40/128"}, func(s *v1beta1.L2AdvertisementSpec) {
		s.NodeSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{zone: "a"}}}
	})
	c.service("zoned", []string{v4.String(), v6.String()}, c.lab.Nodes)

	for _, addr := range []netip.Addr{v4, v6} {
		owner := c.owner(addr)
		if !slices.Contains(selected, owner) {
			t.Fatalf("%s answered by %s, which the node selector does not select", addr, owner.Name)
		}
		other := selected[0]
		if other == owner {
			other = selected[1]
		}
		stop := c.watchOverlap(addr)
		c.label(owner, corev1.LabelNodeExcludeBalancers, "")
		c.waitAnswer(lab.SegmentA, addr, other)
		c.unlabel(owner, corev1.LabelNodeExcludeBalancers)
		c.waitAnswer(lab.SegmentA, addr, owner)
		stop()
	}
}

// label sets a label on a lab Node object until the test ends.
func (c *cluster) label(n *lab.Node, key, value string) {
	c.t.Helper()
	if err := n.SetLabel(context.Background(), key, value, false); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = n.SetLabel(context.Background(), key, "", true) })
}

func (c *cluster) unlabel(n *lab.Node, key string) {
	c.t.Helper()
	if err := n.SetLabel(context.Background(), key, "", true); err != nil {
		c.t.Fatal(err)
	}
}
