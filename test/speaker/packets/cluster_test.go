package packets

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/testenv"
)

// askWindow is how long one request waits for answers: every node on the
// bridge answers within a millisecond, so a second MAC would be heard.
const askWindow = 100 * time.Millisecond

func kube() client.Client { return testenv.Shared.Client }

// cluster is one test's view of the lab: speakers it started, a namespace
// for its Services and a prober on each segment of the client.
type cluster struct {
	t testing.TB
	// root is the test the cluster was made for: its speakers, even those
	// restarted in a subtest, run until it ends.
	root     testing.TB
	lab      *lab.Lab
	ns       string
	speakers map[string]*lab.Speaker
	probe    map[string]*l2probe.Prober // by client interface
	// extra are flags for every speaker this cluster starts.
	extra []string
	// sweeps numbers the sweeps, each asked from its own MAC.
	sweeps *atomic.Uint32
}

// prepareCluster makes a cluster on the lab with no speaker running yet.
func prepareCluster(tb testing.TB, extra ...string) *cluster {
	tb.Helper()
	l := lab.Require(tb)
	c := &cluster{t: tb, root: tb, lab: l, sweeps: &atomic.Uint32{}, speakers: map[string]*lab.Speaker{}, extra: extra,
		probe: map[string]*l2probe.Prober{
			lab.SegmentA: l.Client.Prober(tb, lab.SegmentA),
			lab.SegmentB: l.Client.Prober(tb, lab.SegmentB),
		}}
	c.ns = c.namespace()
	return c
}

// newCluster prepares a cluster and starts its speakers.
func newCluster(tb testing.TB, extra ...string) *cluster {
	tb.Helper()
	c := prepareCluster(tb, extra...)
	c.startAll()
	return c
}

// startAll starts a speaker on every lab node and waits until each is
// ready and sees all the others alive.
func (c *cluster) startAll() {
	c.t.Helper()
	var wg sync.WaitGroup
	for _, n := range c.lab.Nodes {
		s := n.Start(c.root, c.extra...)
		c.speakers[n.Name] = s
		wg.Go(func() { c.waitReady(s) })
	}
	wg.Wait()
	if c.t.Failed() {
		c.t.FailNow()
	}
	c.waitMembers()
}

// in is the cluster seen from subtest t: failures and cleanups go to t.
// The speakers are shared.
func (c *cluster) in(t *testing.T) *cluster {
	sub := *c
	sub.t = t
	return &sub
}

func (c *cluster) namespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "packets-"}}
	if err := kube().Create(context.Background(), ns); err != nil {
		c.t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func (c *cluster) waitReady(s *lab.Speaker) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		c.t.Error(err)
	}
}

// start (re)starts the speaker of n and waits until it is ready.
func (c *cluster) start(n *lab.Node) *lab.Speaker {
	c.t.Helper()
	s := n.Start(c.root, c.extra...)
	c.speakers[n.Name] = s
	c.waitReady(s)
	if c.t.Failed() {
		c.t.FailNow()
	}
	return s
}

// running are the speakers whose process is still running.
func (c *cluster) running() []*lab.Speaker {
	var out []*lab.Speaker
	for _, n := range c.lab.Nodes {
		if s := c.speakers[n.Name]; s != nil && s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// waitMembers waits until every running speaker counts all running
// speakers, and only those, as alive.
func (c *cluster) waitMembers() {
	c.t.Helper()
	if c.lab.MetalLB() {
		// MetalLB's speaker does not count its members in a metric;
		// the BGP benchmarks it runs wait for their sessions instead.
		return
	}
	want := float64(len(c.running()))
	c.waitFor(fmt.Sprintf("every speaker to see %v live members", want), func() bool {
		for _, s := range c.running() {
			m, err := s.Metrics(context.Background())
			if err != nil {
				return false
			}
			if v, _ := m.Value("steadylb_memberlist_members", "state", "alive"); v != want {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond every 20 ms until it holds, failing after a minute.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	c.waitWithin(what, time.Minute, 20*time.Millisecond, cond)
}

// waitWithin polls cond every interval until it holds, failing after
// limit.
func (c *cluster) waitWithin(what string, limit, interval time.Duration, cond func() bool) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), interval, limit, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// advertise creates a pool of addrs and an L2Advertisement for it,
// changed by opts; both are deleted when the test ends.
func (c *cluster) advertise(name string, addrs []string, opts ...func(*v1beta1.L2AdvertisementSpec)) {
	c.t.Helper()
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.lab.Namespace()},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
	c.create(pool)
	spec := v1beta1.L2AdvertisementSpec{IPAddressPools: []string{name}}
	for _, o := range opts {
		o(&spec)
	}
	c.create(&v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.lab.Namespace()}, Spec: spec})
}

// create creates obj and deletes it when the test ends. Cleanups run last
// first, so the speakers (started before) are still running to see it go.
func (c *cluster) create(obj client.Object) {
	c.t.Helper()
	if err := kube().Create(context.Background(), obj); err != nil {
		c.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	c.t.Cleanup(func() { _ = kube().Delete(context.Background(), obj) })
}

// service creates a LoadBalancer Service showing addrs in its status, as
// the controller would have, and an EndpointSlice with one ready endpoint
// on each of endpointNodes.
func (c *cluster) service(name string, addrs []string, endpointNodes []*lab.Node, opts ...func(*corev1.Service)) types.NamespacedName {
	c.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	for _, o := range opts {
		o(svc)
	}
	c.create(svc)
	for _, a := range addrs {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: a})
	}
	if err := kube().Status().Update(context.Background(), svc); err != nil {
		c.t.Fatalf("set the status of service %s: %v", name, err)
	}
	key := client.ObjectKeyFromObject(svc)
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: endpointsOn(endpointNodes)}
	c.create(slice)
	return key
}

// moveEndpoints replaces the Service's endpoints with one on each node.
func (c *cluster) moveEndpoints(key types.NamespacedName, nodes ...*lab.Node) {
	c.t.Helper()
	slice := &discoveryv1.EndpointSlice{}
	if err := kube().Get(context.Background(), key, slice); err != nil {
		c.t.Fatalf("get EndpointSlice %s: %v", key, err)
	}
	slice.Endpoints = endpointsOn(nodes)
	if err := kube().Update(context.Background(), slice); err != nil {
		c.t.Fatalf("update EndpointSlice %s: %v", key, err)
	}
}

func endpointsOn(nodes []*lab.Node) []discoveryv1.Endpoint {
	eps := []discoveryv1.Endpoint{}
	for _, n := range nodes {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{n.IPv4.String()}, NodeName: ptr.To(n.Name),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}})
	}
	return eps
}

func localPolicy(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

// ask sends one request for addr from the client's interface ifname and
// returns the nodes that answered, in the order they did. A MAC of no lab
// node fails the test.
func (c *cluster) ask(ifname string, addr netip.Addr) []*lab.Node {
	c.t.Helper()
	answers, err := c.probe[ifname].Ask(context.Background(), addr, askWindow)
	if err != nil {
		c.t.Fatalf("ask for %s on %s: %v", addr, ifname, err)
	}
	var out []*lab.Node
	for _, a := range answers {
		out = append(out, c.nodeOf(a.MAC, ifname))
	}
	return out
}

// sweep asks for addrs from the client's segment a, from a MAC of its own
// (one of 256 locally administered ones, in turn), so that no answer to
// an earlier sweep can be counted as an answer to this one.
func (c *cluster) sweep(ctx context.Context, addrs []netip.Addr, window time.Duration) (map[netip.Addr][]l2probe.Answer, error) {
	k := byte(c.sweeps.Add(1))
	return c.probe[lab.SegmentA].SweepAs(ctx, net.HardwareAddr{0x02, 0x00, 0x5e, 0x00, 0x01, k}, addrs, window)
}

// nodeOf is the node whose interface ifname has mac.
func (c *cluster) nodeOf(mac net.HardwareAddr, ifname string) *lab.Node {
	c.t.Helper()
	for _, n := range c.lab.Nodes {
		if slices.Equal(n.MAC(ifname), mac) {
			return n
		}
	}
	c.t.Fatalf("%s answered on %s, which is no lab node's %s", mac, ifname, ifname)
	return nil
}

// waitAnswer waits until exactly node (nil: nobody) answers for addr on
// ifname, three requests in a row, and returns.
func (c *cluster) waitAnswer(ifname string, addr netip.Addr, node *lab.Node) {
	c.t.Helper()
	streak := 0
	c.waitFor(fmt.Sprintf("%s on %s answered by %s only", addr, ifname, nameOf(node)), func() bool {
		got := c.ask(ifname, addr)
		if (node == nil && len(got) == 0) || (node != nil && len(got) == 1 && got[0] == node) {
			streak++
		} else {
			streak = 0
		}
		return streak >= 3
	})
}

// owner waits until one node alone answers for addr on segment a, three
// requests in a row, and returns it.
func (c *cluster) owner(addr netip.Addr) *lab.Node {
	c.t.Helper()
	var owner *lab.Node
	streak := 0
	c.waitFor(fmt.Sprintf("one node to answer for %s", addr), func() bool {
		got := c.ask(lab.SegmentA, addr)
		if len(got) == 1 && (owner == nil || got[0] == owner) {
			owner = got[0]
			streak++
		} else {
			owner, streak = nil, 0
		}
		return streak >= 3
	})
	return owner
}

// assertOnly asks n times for addr on ifname and fails unless every
// request was answered by node alone.
func (c *cluster) assertOnly(ifname string, addr netip.Addr, node *lab.Node, n int) {
	c.t.Helper()
	for range n {
		if got := c.ask(ifname, addr); len(got) != 1 || got[0] != node {
			c.t.Fatalf("%s on %s answered by %v, want %s alone", addr, ifname, names(got), nameOf(node))
		}
	}
}

// assertNobody asks n times for addr on ifname and fails if anyone
// answers.
func (c *cluster) assertNobody(ifname string, addr netip.Addr, n int) {
	c.t.Helper()
	for range n {
		if got := c.ask(ifname, addr); len(got) != 0 {
			c.t.Fatalf("%s on %s answered by %v, want nobody", addr, ifname, names(got))
		}
	}
}

// statuses are the ServiceL2Status objects of a Service, by node.
func (c *cluster) statuses(key types.NamespacedName) map[string]v1beta1.ServiceL2Status {
	c.t.Helper()
	var list v1beta1.ServiceL2StatusList
	if err := kube().List(context.Background(), &list, client.InNamespace(c.lab.Namespace()), client.MatchingLabels{
		v1beta1.LabelServiceName: key.Name, v1beta1.LabelServiceNamespace: key.Namespace}); err != nil {
		c.t.Fatalf("list ServiceL2Status: %v", err)
	}
	out := map[string]v1beta1.ServiceL2Status{}
	for _, st := range list.Items {
		out[st.Status.Node] = st
	}
	return out
}

// waitStatus waits until the Service's only ServiceL2Status is node's
// (none for nil), listing exactly ifnames as the answering interfaces.
func (c *cluster) waitStatus(key types.NamespacedName, node *lab.Node, ifnames ...string) {
	c.t.Helper()
	slices.Sort(ifnames)
	var got map[string]v1beta1.ServiceL2Status
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("last ServiceL2Status objects of %s seen: %+v", key, got)
		}
	})
	c.waitFor(fmt.Sprintf("the ServiceL2Status of %s to be %s's, interfaces %v", key, nameOf(node), ifnames), func() bool {
		got = c.statuses(key)
		if node == nil {
			return len(got) == 0
		}
		st, ok := got[node.Name]
		if !ok || len(got) != 1 {
			return false
		}
		var have []string
		for _, i := range st.Status.Interfaces {
			have = append(have, i.Name)
		}
		slices.Sort(have)
		return slices.Equal(have, ifnames) && st.Status.ServiceName == key.Name && st.Status.ServiceNamespace == key.Namespace
	})
}

func nameOf(n *lab.Node) string {
	if n == nil {
		return "nobody"
	}
	return n.Name
}

func names(nodes []*lab.Node) string {
	var s []string
	for _, n := range nodes {
		s = append(s, nameOf(n))
	}
	return "[" + strings.Join(s, " ") + "]"
}
