package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/load"
	"github.com/steadylb/steadylb/test/testenv"
)

// labUnavailable says why the demo cannot run the lab cluster here, or
// returns "".
func labUnavailable(root string) string {
	if reason := cluster.Unavailable(); reason != "" {
		return reason
	}
	if _, err := cluster.KubeProxyPath(root); err != nil {
		return err.Error()
	}
	return ""
}

// runLab is the whole demo: steadylb from its manifests on a lab cluster
// of three nodes with kube-proxy and Pods, a request answered through
// the announced address, the announcing speaker killed, the next request
// answered through the new node, and a controller restart that writes
// nothing.
func runLab() (err error) {
	defer recoverFatal(&err)
	step("building the lab cluster: a control plane, three nodes in network namespaces on one Ethernet segment, kube-proxy (nftables) on each")
	c, err := cluster.Start()
	if err != nil {
		return err
	}
	defer c.Close()
	testenv.Shared = c.Env
	tb, err := newSession()
	if err != nil {
		return err
	}
	defer tb.close()

	step("starting steadylb from config/default: the controller Deployment's two replicas and the speaker DaemonSet, one per node")
	s := c.StartSteadylb(tb)
	step("applying hack/demo/sample.yaml and hack/demo/lab.yaml")
	for _, f := range []string{"sample.yaml", "lab.yaml"} {
		if err := sh(c.Env.KubectlCmd("apply", "-f", filepath.Join(c.Env.RepoRoot, "hack", "demo", f))); err != nil {
			return err
		}
	}
	step("starting a Pod of the Service hello on every node (test/backend: it answers with its Pod, its node and the client's address)")
	app := c.NewApp(tb, "default", "hello")
	for _, n := range c.Lab.Nodes {
		b := app.AddPod(tb, n)
		fmt.Printf("  %s on %s at %s\n", b.Name, n.Name, b.IPv4)
	}
	app.Serve(tb, "hello")
	hello := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}}
	addr := cluster.WaitAddress(tb, hello)
	key := types.NamespacedName{Namespace: "default", Name: "hello"}
	owner, err := waitAnnouncer(key, "")
	if err != nil {
		return err
	}
	fmt.Printf("hello has %s, announced from %s (its ServiceL2Status)\n", addr, owner)

	step(fmt.Sprintf("a request from the client (%s, on the same segment) to http://%s/", lab.ClientIPv4, addr))
	if err := request(c, addr); err != nil {
		return err
	}

	step("killing the speaker on " + owner + " with SIGKILL")
	s.Speakers[owner].Kill()
	next, err := waitAnnouncer(key, owner)
	if err != nil {
		return err
	}
	fmt.Printf("%s announces %s now\n", next, addr)
	if err := waitClientOn(c, addr, next); err != nil {
		return err
	}
	if err := request(c, addr); err != nil {
		return err
	}
	step("the kubelet would start the speaker again: starting it on " + owner)
	s.Speakers[owner] = c.StartSpeaker(tb, c.Node(owner))

	step("killing both controller replicas with SIGKILL and starting new ones, as the Deployment would")
	before, err := snapshot(c.Env)
	if err != nil {
		return err
	}
	for i, ctl := range s.Controllers {
		ctl.Kill()
		s.Controllers[i] = c.StartController(tb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ctl := range s.Controllers {
		if err := ctl.WaitReady(ctx); err != nil {
			return err
		}
	}
	if err := waitLeaderIdle(ctx, s); err != nil {
		return err
	}
	after, err := snapshot(c.Env)
	if err != nil {
		return err
	}
	compare(before, after)

	fmt.Printf("\nsteadylb is running on the lab. Try:\n\n  export KUBECONFIG=%s\n  %s get svc -A\n"+
		"  ip netns exec %s curl http://%s/\n\nPress Ctrl-C to stop.\n", c.Env.Kubeconfig, c.Env.Kubectl, c.Lab.Client.NS.Name, addr)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}

// waitAnnouncer waits until one node other than not announces the
// Service.
func waitAnnouncer(key types.NamespacedName, not string) (string, error) {
	var owner string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true,
		func(ctx context.Context) (bool, error) {
			owner, _ = cluster.Announcer(ctx, key)
			return owner != "" && owner != not, nil
		})
	if err != nil {
		return "", fmt.Errorf("no node other than %q announces %s: %w", not, key, err)
	}
	return owner, nil
}

// waitClientOn waits until the client's neighbour table sends addr to
// node (the new owner's gratuitous ARP updated it).
func waitClientOn(c *cluster.Cluster, addr netip.Addr, node string) error {
	want := c.Node(node).MAC(lab.SegmentA).String()
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) {
			mac, err := c.ClientNeighbor(addr)
			return err == nil && mac.String() == want, nil
		})
}

// request sends a request from the client, again until one is answered
// (kube-proxy may not have synced the Service yet), and says who answered
// and through which node it went.
func request(c *cluster.Cluster, addr netip.Addr) error {
	var body []byte
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true,
		func(ctx context.Context) (bool, error) {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var err error
			body, err = c.Lab.Client.Get(ctx, cluster.URL(addr))
			return err == nil, nil
		})
	if err != nil {
		return fmt.Errorf("no answer from %s: %w", addr, err)
	}
	var a load.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("answer %q: %w", body, err)
	}
	through := "?"
	if mac, err := c.ClientNeighbor(addr); err == nil {
		if n := c.Lab.NodeByMAC(mac); n != nil {
			through = n.Name
		}
	}
	fmt.Printf("answered by pod %s on %s, through %s (the client's ARP entry); the pod saw the request from %s\n",
		a.Pod, a.Node, through, a.Client)
	return nil
}

// waitLeaderIdle waits until one of the new replicas holds the Lease
// (the killed leader never released it: that takes the lease duration)
// and its queues are idle, so the comparison sees any write the new
// leader's startup makes.
func waitLeaderIdle(ctx context.Context, s *cluster.Steadylb) error {
	var leader *cluster.Controller
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		name := cluster.Leader(ctx)
		for _, ctl := range s.Controllers {
			if ctl.Pod.Name == name {
				leader = ctl
			}
		}
		return leader != nil, nil
	})
	if err != nil {
		return fmt.Errorf("no new replica took the Lease: %w", err)
	}
	fmt.Printf("%s leads now\n", leader.Pod.Name)
	return leader.WaitIdle(ctx)
}
