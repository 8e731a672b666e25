package cluster_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/load"
)

// rate is the load of every scenario: requests per second, each on a new
// connection (timeouts: see startLoad).
const rate = 300

// steady is how many answers in a row count as traffic flowing.
const steady = 300

// l2Run is one layer-2 scenario under way: steadylb, an App with a Pod on
// every node, its Service announced from owner, and the load running.
type l2Run struct {
	c       *cluster.Cluster
	s       *cluster.Steadylb
	app     *cluster.App
	pods    map[string]*cluster.Backend
	key     types.NamespacedName
	addr    netip.Addr
	owner   *lab.Node
	traffic *load.Traffic
	// moves counts the times the traffic was seen to move to another node.
	moves int
}

var addressSerial atomic.Int64

// startL2 starts steadylb, the App and the load, and waits until traffic
// flows through the elected node.
func startL2(tb testing.TB, opts ...cluster.ServiceOption) *l2Run {
	tb.Helper()
	c := cluster.Require(tb)
	r := &l2Run{c: c, s: c.StartSteadylb(tb), pods: map[string]*cluster.Backend{}}
	ns := fixture.Namespace(tb)
	cluster.L2Pool(tb, "l2-"+ns, ns, labAddress(10+int(addressSerial.Add(1))))
	r.app = c.NewApp(tb, ns, "web")
	for _, n := range c.Lab.Nodes {
		r.pods[n.Name] = r.app.AddPod(tb, n)
	}
	svc := r.app.Service(tb, opts...)
	r.key = types.NamespacedName{Namespace: ns, Name: svc.Name}
	r.addr = cluster.WaitAddress(tb, svc)
	r.owner = r.waitOwner(tb, "")
	r.traffic = startLoad(tb, c, r.addr, rate)
	r.settle(tb, r.owner)
	return r
}

// waitOwner waits until a node other than not announces the Service (its
// ServiceL2Status) and returns it.
func (r *l2Run) waitOwner(tb testing.TB, not string) *lab.Node {
	tb.Helper()
	var owner string
	fixture.WaitFor(tb, "a node other than "+not+" to announce "+r.key.String(), func() bool {
		owner, _ = cluster.Announcer(tb.Context(), r.key)
		return owner != "" && owner != not
	})
	return r.c.Node(owner)
}

// settle waits until n announces the Service, the client's requests go to
// n, and steady answers in a row have come back.
func (r *l2Run) settle(tb testing.TB, n *lab.Node) {
	tb.Helper()
	fixture.WaitFor(tb, n.Name+" to announce "+r.key.String()+" and the client to use it", func() bool {
		owner, _ := cluster.Announcer(tb.Context(), r.key)
		mac, err := r.c.ClientNeighbor(r.addr)
		return owner == n.Name && err == nil && mac.String() == n.MAC(lab.SegmentA).String()
	})
	await(tb, r.traffic, fmt.Sprintf("%d answers in a row through %s", steady, n.Name), steady, succeeded)
}

// finish stops the load and returns its report.
func (r *l2Run) finish(tb testing.TB) load.Report {
	tb.Helper()
	return stop(tb, r.traffic)
}

// l2Disruption is something that happens to the announcing node while the
// load runs; it returns once traffic has settled again.
type l2Disruption struct {
	name string
	do   func(tb testing.TB, r *l2Run)
}

var l2Disruptions = []l2Disruption{
	{"SIGKILL", func(tb testing.TB, r *l2Run) {
		// The kubelet starts the container again.
		r.s.Speakers[r.owner.Name].Kill()
		next := r.waitOwner(tb, r.owner.Name)
		r.settle(tb, next)
		r.s.Speakers[r.owner.Name] = r.c.StartSpeaker(tb, r.owner)
		r.waitReady(tb, r.s.Speakers[r.owner.Name])
		r.settle(tb, r.owner)
	}},
	{"LinkCut", func(tb testing.TB, r *l2Run) {
		if err := r.owner.CutLink(lab.SegmentA); err != nil {
			tb.Fatal(err)
		}
		next := r.waitOwner(tb, r.owner.Name)
		// The node is gone for the cluster too: the node lifecycle
		// controller would mark its endpoints not ready after its grace
		// period (40 s and more); here once the load balancer has moved,
		// so the figure is the load balancer's and kube-proxy's, not the
		// grace period's.
		r.app.SetConditions(tb, r.pods[r.owner.Name], false, false, false)
		r.settle(tb, next)
		if err := r.owner.RestoreLink(lab.SegmentA); err != nil {
			tb.Fatal(err)
		}
		r.app.SetConditions(tb, r.pods[r.owner.Name], true, true, false)
		r.settle(tb, r.owner)
	}},
	{"Freeze2s", func(tb testing.TB, r *l2Run) {
		sp := r.s.Speakers[r.owner.Name]
		if err := sp.Stop(true); err != nil {
			tb.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the freeze itself, not a wait for a condition
		if err := sp.Stop(false); err != nil {
			tb.Fatal(err)
		}
		r.settle(tb, r.owner)
	}},
}

func (r *l2Run) waitReady(tb testing.TB, sp *cluster.Speaker) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	if err := sp.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
}

// rollingUpgrade restarts every speaker with SIGTERM, one node after the
// other as a DaemonSet rolling update does (the old Pod deleted, a new
// one started, the next node once it is ready), then the controller
// replicas as a Deployment rolling update does (a new replica, ready,
// then the old one stopped). When the speaker that goes is the one
// announcing, it waits until another node announces and the client's
// requests go there, so the scenario has moved the traffic at least once.
func rollingUpgrade(tb testing.TB, r *l2Run) {
	tb.Helper()
	for _, n := range r.c.Lab.Nodes {
		owner, _ := cluster.Announcer(tb.Context(), r.key)
		finish := r.c.ReplaceSpeakerPod(tb, n)
		old := r.s.Speakers[n.Name]
		if err := old.Term(); err != nil {
			tb.Fatal(err)
		}
		<-old.Done
		if owner == n.Name {
			r.settle(tb, r.waitOwner(tb, n.Name))
			r.moves++
		}
		finish()
		r.s.Speakers[n.Name] = r.c.StartSpeaker(tb, n)
		r.waitReady(tb, r.s.Speakers[n.Name])
	}
	restartControllers(tb, r.c, r.s)
	owner := r.waitOwner(tb, "")
	r.settle(tb, owner)
}

// restartControllers replaces the controller replicas as a Deployment
// rolling update does (maxSurge 1, maxUnavailable 0): a new replica,
// ready, then an old one stopped with SIGTERM.
func restartControllers(tb testing.TB, c *cluster.Cluster, s *cluster.Steadylb) {
	tb.Helper()
	olds := s.Controllers
	s.Controllers = nil
	for _, old := range olds {
		ctl := c.StartController(tb)
		ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
		err := ctl.WaitReady(ctx)
		cancel()
		if err != nil {
			tb.Fatal(err)
		}
		if err := old.Term(); err != nil {
			tb.Fatal(err)
		}
		<-old.Done
		s.Controllers = append(s.Controllers, ctl)
	}
}
