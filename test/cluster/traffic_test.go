package cluster_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/lab"
)

// TestRequestsReachPods: a request to a Service's LoadBalancer address is
// answered by its Pods on every node (kube-proxy spreads them under
// Cluster policy, masquerading the client), through the node the
// speakers elected, which is the one ServiceL2Status names.
func TestRequestsReachPods(t *testing.T) {
	c := cluster.Require(t)
	c.StartSteadylb(t)
	ns := fixture.Namespace(t)
	cluster.L2Pool(t, "reach-"+ns, ns, labAddress(0))
	app := c.NewApp(t, ns, "web")
	for _, n := range c.Lab.Nodes {
		app.AddPod(t, n)
	}
	svc := app.Service(t)
	addr := cluster.WaitAddress(t, svc)
	tr := startLoad(t, c, addr, 100)
	await(t, tr, "300 answers", 300, succeeded)
	rep := stop(t, tr)
	if rep.Failed != 0 {
		t.Errorf("%d of %d requests failed: %v", rep.Failed, rep.Sent, rep.Errors)
	}
	if len(rep.ByPod) != len(c.Lab.Nodes) {
		t.Errorf("answers by pod %v, want one pod per node", rep.ByPod)
	}
	if n := rep.Sources[lab.ClientIPv4.String()]; n != 0 {
		t.Errorf("%d requests reached a pod from the client's own address under Cluster policy (no masquerade)", n)
	}
	owner, err := cluster.Announcer(t.Context(), types.NamespacedName{Namespace: ns, Name: svc.Name})
	if err != nil || owner == "" {
		t.Fatalf("no single ServiceL2Status for %s: %v", svc.Name, err)
	}
	mac, err := c.ClientNeighbor(addr)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Lab.NodeByMAC(mac); got == nil || got.Name != owner {
		t.Errorf("the client reaches %s at %s (node %v), ServiceL2Status says %s", addr, mac, got, owner)
	}
}
