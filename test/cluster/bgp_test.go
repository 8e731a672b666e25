package cluster_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/load"
	"github.com/steadylb/steadylb/test/testenv"
)

// The router's AS and the nodes'; the sessions are eBGP.
const routerAS, nodeAS = 64512, 64500

// bgpRun is one BGP scenario under way: FRR as the router in the client's
// namespace (the client sends through its ECMP routes), steadylb, an App
// with a Pod on every node, and the load.
type bgpRun struct {
	c       *cluster.Cluster
	s       *cluster.Steadylb
	router  *frr.Router
	app     *cluster.App
	pods    map[string]*cluster.Backend
	prefix  string
	traffic *load.Traffic
}

type bgpOptions struct {
	bfd, gracefulRestart bool
	service              []cluster.ServiceOption
}

var bgpSerial atomic.Int64

// routerConfig is bgpd's configuration: a neighbor per node (with BFD at
// 300 ms x 3 when bfd), up to 16 paths per prefix.
func routerConfig(l *lab.Lab, bfd bool) string {
	var b strings.Builder
	// The neighbor and graceful-restart events go to bgpd.log, which a
	// failed test shows: they tell a path the router dropped from one it
	// kept stale.
	b.WriteString("debug bgp neighbor-events\ndebug bgp graceful-restart\n")
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n bgp bestpath as-path multipath-relax\n",
		routerAS, lab.ClientIPv4)
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n", n.IPv4, nodeAS)
		if bfd {
			fmt.Fprintf(&b, " neighbor %s bfd\n", n.IPv4)
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 16\n exit-address-family\n")
	return b.String()
}

func createObj(tb testing.TB, obj client.Object) {
	tb.Helper()
	if err := testenv.Shared.Client.Create(tb.Context(), obj); err != nil {
		tb.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	tb.Cleanup(func() { _ = testenv.Shared.Client.Delete(context.Background(), obj) })
}

// startBGP starts FRR, steadylb and the App, and waits until FRR has the
// Service's prefix from every node with a Pod and the load is answered.
func startBGP(tb testing.TB, o bgpOptions) *bgpRun {
	tb.Helper()
	frr.Require(tb, "bgpd", "zebra", "bfdd")
	c := cluster.Require(tb)
	l := c.Lab
	// Spread connections over the paths by ports too, as a router
	// hashing on the 5-tuple does; by addresses alone every request of
	// the one client would take one path.
	l.Client.NS.Sysctl(tb, "net.ipv4.fib_multipath_hash_policy", "1")
	r := &bgpRun{c: c, pods: map[string]*cluster.Backend{}}
	r.router = frr.Start(tb, l.Client.NS, map[string]string{"zebra": "", "bfdd": "", "bgpd": routerConfig(l, o.bfd)})
	id := bgpSerial.Add(1)
	ns := fixture.Namespace(tb)
	spec := v1beta2.BGPPeerSpec{MyASN: nodeAS, ASN: routerAS, Address: lab.ClientIPv4.String(),
		EnableGracefulRestart: o.gracefulRestart}
	if o.bfd {
		createObj(tb, &v1beta1.BFDProfile{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bfd-%d", id), Namespace: testenv.Namespace}})
		spec.BFDProfile = fmt.Sprintf("bfd-%d", id)
	}
	createObj(tb, &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("frr-%d", id), Namespace: testenv.Namespace}, Spec: spec})
	addr := netip.AddrFrom4([4]byte{203, 0, 113, byte(id)})
	pool := "bgp-" + ns
	fixture.Pool(tb, pool, ns, addr.String()+"/32")
	createObj(tb, &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: testenv.Namespace},
		Spec: v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}}})
	r.s = c.StartSteadylb(tb)
	r.app = c.NewApp(tb, ns, "web")
	for _, n := range l.Nodes {
		r.pods[n.Name] = r.app.AddPod(tb, n)
	}
	svc := r.app.Service(tb, o.service...)
	if got := cluster.WaitAddress(tb, svc); got != addr {
		tb.Fatalf("%s got %s, want %s", svc.Name, got, addr)
	}
	r.prefix = addr.String() + "/32"
	r.waitPaths(tb, l.Nodes...)
	r.waitKernelPaths(tb, l.Nodes...)
	watchRoutes(tb, l.Client.NS)
	r.traffic = startLoad(tb, c, addr, rate)
	await(tb, r.traffic, fmt.Sprintf("%d answers in a row", steady), steady, succeeded)
	return r
}

// nextHops are FRR's next hops for the Service's prefix, sorted.
func (r *bgpRun) nextHops(tb testing.TB) []string {
	var out []string
	for _, p := range r.router.BGPRoute(tb, r.prefix) {
		for _, h := range p.NextHops {
			out = append(out, h.IP)
		}
	}
	slices.Sort(out)
	return out
}

// waitFresh waits until FRR's paths for the prefix come from exactly
// nodes, none of them stale.
func (r *bgpRun) waitFresh(tb testing.TB, nodes ...*lab.Node) {
	tb.Helper()
	r.waitPaths(tb, nodes...)
	fixture.WaitFor(tb, "no stale path at FRR", func() bool {
		for _, p := range r.router.BGPRoute(tb, r.prefix) {
			if p.Stale {
				return false
			}
		}
		return true
	})
}

// waitPaths waits until FRR's paths for the prefix come from exactly
// nodes.
func (r *bgpRun) waitPaths(tb testing.TB, nodes ...*lab.Node) {
	tb.Helper()
	var want []string
	for _, n := range nodes {
		want = append(want, n.IPv4.String())
	}
	slices.Sort(want)
	fixture.WaitFor(tb, fmt.Sprintf("FRR's paths for %s from %v", r.prefix, want), func() bool {
		return cmp.Equal(r.nextHops(tb), want)
	})
}

// waitKernelPaths waits until the client's kernel routes the prefix over
// every one of nodes. bgpd holds a path a moment before zebra installs it,
// and a connection made in between may be rehashed to the next hop added
// under it, which resets it: a load started then failed a request before
// anything happened to the nodes.
func (r *bgpRun) waitKernelPaths(tb testing.TB, nodes ...*lab.Node) {
	tb.Helper()
	ns := r.c.Lab.Client.NS
	fixture.WaitFor(tb, "the client's kernel to route "+r.prefix+" over every node", func() bool {
		out, err := ns.Exec("route", "show", r.prefix)
		if err != nil {
			tb.Fatalf("ip route show %s: %v", r.prefix, err)
		}
		for _, n := range nodes {
			if !strings.Contains(out, "via "+n.IPv4.String()+" ") {
				return false
			}
		}
		return true
	})
}

// waitLeft waits until FRR holds no fresh path from n: withdrawn, or
// kept stale by graceful restart.
func (r *bgpRun) waitLeft(tb testing.TB, n *lab.Node) {
	tb.Helper()
	fixture.WaitFor(tb, "FRR to hold no fresh path from "+n.Name, func() bool {
		for _, p := range r.router.BGPRoute(tb, r.prefix) {
			for _, h := range p.NextHops {
				if h.IP == n.IPv4.String() && !p.Stale {
					return false
				}
			}
		}
		return true
	})
}

// others are the nodes but n.
func (r *bgpRun) others(n *lab.Node) []*lab.Node {
	var out []*lab.Node
	for _, m := range r.c.Lab.Nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// settle waits for steady answers again.
func (r *bgpRun) settle(tb testing.TB) {
	tb.Helper()
	await(tb, r.traffic, fmt.Sprintf("%d answers in a row", steady), steady, succeeded)
}

func (r *bgpRun) waitReady(tb testing.TB, sp *cluster.Speaker) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	if err := sp.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
}

// bgpScenario is something that happens to a node while the load runs,
// with the router and Service settings it runs under.
type bgpScenario struct {
	name string
	opts bgpOptions
	do   func(tb testing.TB, r *bgpRun)
}

var bgpScenarios = []bgpScenario{
	{"SIGKILL", bgpOptions{}, func(tb testing.TB, r *bgpRun) {
		victim := r.c.Lab.Nodes[0]
		r.s.Speakers[victim.Name].Kill()
		r.waitPaths(tb, r.others(victim)...)
		r.settle(tb)
		r.s.Speakers[victim.Name] = r.c.StartSpeaker(tb, victim)
		r.waitReady(tb, r.s.Speakers[victim.Name])
		r.waitPaths(tb, r.c.Lab.Nodes...)
		r.settle(tb)
	}},
	{"SIGKILL-GracefulRestart", bgpOptions{gracefulRestart: true}, func(tb testing.TB, r *bgpRun) {
		victim := r.c.Lab.Nodes[0]
		r.s.Speakers[victim.Name].Kill()
		r.waitLeft(tb, victim)
		r.s.Speakers[victim.Name] = r.c.StartSpeaker(tb, victim)
		r.waitReady(tb, r.s.Speakers[victim.Name])
		r.waitFresh(tb, r.c.Lab.Nodes...)
		r.settle(tb)
	}},
	{"LinkCut-BFD", bgpOptions{bfd: true}, func(tb testing.TB, r *bgpRun) {
		victim := r.c.Lab.Nodes[0]
		if err := victim.CutLink(lab.SegmentA); err != nil {
			tb.Fatal(err)
		}
		r.waitPaths(tb, r.others(victim)...)
		// The node lifecycle controller's part, once the router has
		// moved (see the layer-2 link cut).
		r.app.SetConditions(tb, r.pods[victim.Name], false, false, false)
		r.settle(tb)
		if err := victim.RestoreLink(lab.SegmentA); err != nil {
			tb.Fatal(err)
		}
		r.app.SetConditions(tb, r.pods[victim.Name], true, true, false)
		r.waitPaths(tb, r.c.Lab.Nodes...)
		r.settle(tb)
	}},
	{"Drain-Local", bgpOptions{service: []cluster.ServiceOption{cluster.Local}}, func(tb testing.TB, r *bgpRun) {
		victim := r.c.Lab.Nodes[0]
		if err := r.c.Cordon(tb.Context(), victim, true); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = r.c.Cordon(context.Background(), victim, false) })
		r.app.Terminate(tb, r.pods[victim.Name])
		r.waitPaths(tb, r.others(victim)...)
		r.settle(tb)
	}},
	{"RollingUpgrade", bgpOptions{}, func(tb testing.TB, r *bgpRun) {
		rollingUpgradeBGP(tb, r)
	}},
	{"RollingUpgrade-GracefulRestart", bgpOptions{gracefulRestart: true}, func(tb testing.TB, r *bgpRun) {
		rollingUpgradeBGP(tb, r)
	}},
}

// rollingUpgradeBGP is rollingUpgrade with, for every node, FRR seen to
// stop using the node's path (withdrawn, or stale under graceful restart)
// and to have fresh paths from every node again before the next speaker
// goes.
func rollingUpgradeBGP(tb testing.TB, r *bgpRun) {
	tb.Helper()
	for _, n := range r.c.Lab.Nodes {
		finish := r.c.ReplaceSpeakerPod(tb, n)
		old := r.s.Speakers[n.Name]
		logStep(tb, "stopping the speaker of "+n.Name)
		if err := old.Term(); err != nil {
			tb.Fatal(err)
		}
		<-old.Done
		r.waitLeft(tb, n)
		logStep(tb, "FRR holds no fresh path from "+n.Name)
		finish()
		r.s.Speakers[n.Name] = r.c.StartSpeaker(tb, n)
		r.waitReady(tb, r.s.Speakers[n.Name])
		logStep(tb, "the new speaker of "+n.Name+" is ready")
		r.waitFresh(tb, r.c.Lab.Nodes...)
		logStep(tb, "FRR has fresh paths from every node")
	}
	restartControllers(tb, r.c, r.s)
	r.settle(tb)
}

// TestBGPRollingUpgrade: with graceful restart, every speaker restarted
// with SIGTERM one node after the other, then both controller replicas,
// while the router spreads the requests over the nodes: not one request
// fails. (Without graceful restart each restart withdraws the node's path
// and announces it again, and the router re-hashes the connections in
// flight at those instants: BenchmarkBGP counts them.)
func TestBGPRollingUpgrade(t *testing.T) {
	for _, gr := range []bool{true} {
		t.Run(fmt.Sprintf("GracefulRestart=%v", gr), func(t *testing.T) {
			r := startBGP(t, bgpOptions{gracefulRestart: gr})
			rollingUpgradeBGP(t, r)
			rep := stop(t, r.traffic)
			if rep.Failed != 0 {
				t.Errorf("%d of %d requests failed during the rolling upgrade: %v", rep.Failed, rep.Sent, rep.Errors)
			}
		})
	}
}

// BenchmarkBGP: failed requests and the longest time without an answer
// with FRR as the router spreading requests over the nodes (ECMP), when
// a speaker is killed (with and without graceful restart), a node's link
// is cut (BFD 300 ms x 3), a node is drained under Local policy, and
// during a rolling upgrade, at 300 requests per second.
func BenchmarkBGP(b *testing.B) {
	for _, sc := range bgpScenarios {
		b.Run(sc.name, func(b *testing.B) {
			for b.Loop() {
				r := startBGP(b, sc.opts)
				sc.do(b, r)
				rep := stop(b, r.traffic)
				b.ReportMetric(float64(rep.Failed), "failed")
				b.ReportMetric(float64(rep.Sent), "requests")
				b.ReportMetric(float64(rep.LongestGap.Milliseconds()), "gap-ms")
				b.ReportMetric(float64(rep.LongestStall.Milliseconds()), "loadgen-stall-ms")
			}
		})
	}
}
