package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/load"
)

// healthyNodes are the nodes whose kube-proxy answers 200 on the
// Service's health check node port (it has a local endpoint), as a cloud
// load balancer would ask them from outside. A node whose kube-proxy does
// not answer yet (it opens the port when it syncs the Service) makes it
// fail.
func healthyNodes(t *testing.T, c *cluster.Cluster, port int32) ([]string, error) {
	t.Helper()
	var out []string
	for _, n := range c.Lab.Nodes {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		code, err := cluster.StatusIn(ctx, c.Lab.Client.NS, fmt.Sprintf("http://%s:%d/", n.IPv4, port))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("health check node port of %s: %w", n.Name, err)
		}
		if code == http.StatusOK {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// healthyAre reports whether exactly nodes pass the health check.
func healthyAre(t *testing.T, c *cluster.Cluster, port int32, nodes ...string) bool {
	got, err := healthyNodes(t, c, port)
	return err == nil && slices.Equal(got, nodes)
}

// TestLocalPolicy: under externalTrafficPolicy: Local the Pods see the
// client's own address, only a node with a ready endpoint is announced
// and carries traffic, and the node the speakers announce from is always
// one that kube-proxy's health check node port calls healthy; when the
// announcing node's last Pod terminates, both move to the node that still
// has one while the Pod drains, and no request fails but, at most, the one
// connection in flight at the instant the address moves.
func TestLocalPolicy(t *testing.T) {
	c := cluster.Require(t)
	c.StartSteadylb(t)
	ns := fixture.Namespace(t)
	cluster.L2Pool(t, "local-"+ns, ns, labAddress(1))
	app := c.NewApp(t, ns, "local")
	backends := map[string]*cluster.Backend{}
	for _, n := range c.Lab.Nodes[1:] {
		backends[n.Name] = app.AddPod(t, n)
	}
	svc := app.Service(t, cluster.Local)
	addr := cluster.WaitAddress(t, svc)
	var got corev1.Service
	if err := c.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(svc), &got); err != nil {
		t.Fatal(err)
	}
	hc := got.Spec.HealthCheckNodePort
	if hc == 0 {
		t.Fatal("the API server gave the Local Service no health check node port")
	}
	key := types.NamespacedName{Namespace: ns, Name: svc.Name}
	withPods := []string{c.Lab.Nodes[1].Name, c.Lab.Nodes[2].Name}
	var owner string
	fixture.WaitFor(t, "kube-proxy's health checks to pass on the nodes with pods", func() bool {
		return healthyAre(t, c, hc, withPods...)
	})
	fixture.WaitFor(t, "one node to announce "+svc.Name, func() bool {
		owner, _ = cluster.Announcer(t.Context(), key)
		return owner != ""
	})
	if !slices.Contains(withPods, owner) {
		t.Fatalf("%s announced from %s, which has no endpoint (pods on %v)", svc.Name, owner, withPods)
	}

	tr := startLoad(t, c, addr, 200)
	from := func(node string) func(load.Result) bool {
		return func(r load.Result) bool { return r.OK() && r.Answer.Node == node }
	}
	await(t, tr, "300 answers from "+owner, 300, from(owner))

	// The owner's only Pod goes: its endpoint terminates, then leaves.
	app.Terminate(t, backends[owner])
	other := withPods[0]
	if other == owner {
		other = withPods[1]
	}
	fixture.WaitFor(t, "the health check to fail on "+owner, func() bool {
		return healthyAre(t, c, hc, other)
	})
	fixture.WaitFor(t, "the announcement to move to "+other, func() bool {
		o, _ := cluster.Announcer(t.Context(), key)
		return o == other
	})
	await(t, tr, "300 answers from "+other, 300, from(other))
	rep := stop(t, tr)

	if len(rep.Sources) != 1 || rep.Sources[lab.ClientIPv4.String()] == 0 {
		t.Errorf("pods saw the requests from %v, want only the client's address %s", rep.Sources, lab.ClientIPv4)
	}
	for node := range rep.ByNode {
		if !slices.Contains(withPods, node) {
			t.Errorf("node %s, which has no endpoint, answered", node)
		}
	}
	// The address moves once: a connection in flight at that instant
	// reaches a node with no state for it and is reset (what any layer-2
	// move costs, TestL2RollingUpgrade); nothing else may fail.
	if resets := rep.Errors[load.ErrReset]; rep.Failed != resets || resets > 1 {
		t.Errorf("%d of %d requests failed while the announcement followed the last local Pod (drained for %v): %v; want none but at most 1 reset of a connection in flight while the address moved",
			rep.Failed, rep.Sent, cluster.BackendDrain, rep.Errors)
	}
}
