package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/podproc"
	"github.com/steadylb/steadylb/test/testenv"
)

// Shared is the cluster Run built for the current test binary.
var Shared *Cluster

// Binaries are the commands a cluster runs.
type Binaries struct {
	Controller, Speaker, Backend, Loadgen, Podinit, KubeProxy string
}

// Cluster is the lab with kube-proxy on its nodes and what is needed to
// run steadylb from its manifests.
type Cluster struct {
	Lab       *lab.Lab
	Env       *testenv.Env
	Manifests *Manifests
	Runtime   *podproc.Runtime

	bins      Binaries
	apiServer string // the API server's address, as the nodes reach it
	proxies   []*kubeProxy

	undo []func() error

	mu          sync.Mutex
	speakerPods map[string]string // node -> current speaker Pod, when not the lab's
}

// Unavailable says why a cluster cannot be built here, or returns "".
func Unavailable() string {
	if reason := lab.PodsUnavailable(); reason != "" {
		return reason
	}
	for _, tool := range []string{"nft", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("needs %s (Debian packages nftables, util-linux)", tool)
		}
	}
	return ""
}

// Require returns Shared, or skips tb with the reason clusters are
// unavailable here.
func Require(tb testing.TB) *Cluster {
	tb.Helper()
	if reason := Unavailable(); reason != "" {
		tb.Skip(reason)
	}
	if Shared == nil {
		tb.Fatal("cluster: no cluster; call cluster.Run from TestMain")
	}
	return Shared
}

// Run is a TestMain body: it starts a cluster (Start), runs the tests and
// takes everything down, returning the exit code. Where clusters are
// unavailable it runs the tests without, and Require skips them.
func Run(m *testing.M) int {
	if Unavailable() != "" {
		return m.Run()
	}
	c, err := Start()
	if err != nil {
		return fail(err)
	}
	testenv.Shared, Shared = c.Env, c
	code := m.Run()
	if err := c.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: take the cluster down: %v\n", err)
		code = 1
	}
	return code
}

// Start builds the commands, starts the control plane and builds a lab of
// three nodes with kube-proxy on each. Close takes it all down.
func Start() (_ *Cluster, err error) {
	if reason := Unavailable(); reason != "" {
		return nil, fmt.Errorf("cluster: %s", reason)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	var bins Binaries
	if bins.KubeProxy, err = KubeProxyPath(root); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "steadylb-cluster-")
	if err != nil {
		return nil, err
	}
	var undo []func() error
	undo = append(undo, func() error { return os.RemoveAll(dir) })
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				err = errors.Join(err, undo[i]())
			}
		}
	}()
	// Static binaries, as in the images: they run in an empty root. One
	// go build for all, so they compile in parallel.
	pkgs := map[string]*string{
		"cmd/controller": &bins.Controller, "cmd/speaker": &bins.Speaker, "test/backend": &bins.Backend,
		"test/loadgen": &bins.Loadgen, "test/podinit": &bins.Podinit,
	}
	args := []string{"build", "-o", dir + "/"}
	for pkg, into := range pkgs {
		*into = filepath.Join(dir, filepath.Base(pkg))
		args = append(args, "github.com/steadylb/steadylb/"+pkg)
	}
	gobuild := exec.Command("go", args...)
	gobuild.Dir = root
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	gobuild.Stdout, gobuild.Stderr = os.Stderr, os.Stderr
	if err := gobuild.Run(); err != nil {
		return nil, fmt.Errorf("build the commands: %w", err)
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	undo = append(undo, env.Stop)
	l, err := lab.New(lab.Options{Env: env, Speaker: bins.Speaker})
	if err != nil {
		return nil, err
	}
	undo = append(undo, l.Close)
	c, err := build(root, dir, env, l, bins)
	undo = append(undo, c.stopProxies)
	if err != nil {
		return nil, err
	}
	c.undo = undo
	return c, nil
}

// Close stops kube-proxy, takes the lab and the control plane down and
// removes the binaries.
func (c *Cluster) Close() error {
	var errs []error
	for i := len(c.undo) - 1; i >= 0; i-- {
		errs = append(errs, c.undo[i]())
	}
	c.undo = nil
	return errors.Join(errs...)
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
	return 1
}

// build makes the lab a cluster: node addresses in the Node objects,
// forwarding and routes between the nodes' pod networks, kube-proxy on
// every node, and the manifests' identities applied.
func build(root, dir string, env *testenv.Env, l *lab.Lab, bins Binaries) (*Cluster, error) {
	api, err := url.Parse(env.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("cluster: API server address: %w", err)
	}
	c := &Cluster{Lab: l, Env: env, bins: bins, speakerPods: map[string]string{},
		apiServer: net.JoinHostPort("127.0.0.1", api.Port())}
	c.Runtime = &podproc.Runtime{Env: env, Podinit: bins.Podinit, Images: map[string]podproc.Image{
		"controller": {Binary: bins.Controller}, "speaker": {Binary: bins.Speaker},
	},
		// The kubelet rewrites a changed Secret volume within about a
		// minute; the speakers wait for the key the controller writes
		// into theirs. Sooner here, so that a start costs seconds: the
		// order of events is the same.
		RefreshEvery: 2 * time.Second,
	}
	if c.Manifests, err = Render(filepath.Join(root, "config", "default")); err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Manifests.ApplyIdentity(ctx, env.Client); err != nil {
		return c, err
	}
	if err := c.memberlistKey(ctx); err != nil {
		return c, err
	}
	for _, n := range l.Nodes {
		if err := c.wireNode(ctx, n); err != nil {
			return c, err
		}
		if err := c.adoptSpeakerPod(ctx, n); err != nil {
			return c, err
		}
	}
	for _, n := range l.Nodes {
		k, err := startKubeProxy(bins.KubeProxy, dir, n, "nftables", env.Kubeconfig)
		if err != nil {
			return c, err
		}
		c.proxies = append(c.proxies, k)
	}
	for _, k := range c.proxies {
		if err := k.waitHealthy(ctx, l.Client); err != nil {
			return c, err
		}
	}
	return c, nil
}

// wireNode gives n what a node of a real cluster has: forwarding on,
// routes to the other nodes' pod networks through them, and a Node
// object whose status carries its addresses (kube-proxy reads its node
// IPs there) and says it is ready.
func (c *Cluster) wireNode(ctx context.Context, n *lab.Node) error {
	if err := n.NS.Run(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0)
	}); err != nil {
		return fmt.Errorf("cluster: forwarding on %s: %w", n.Name, err)
	}
	for _, other := range c.Lab.Nodes {
		if other == n {
			continue
		}
		if _, err := n.NS.Exec("route", "add", other.PodCIDR4().String(), "via", other.IPv4.String()); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	var node corev1.Node
	if err := c.Env.Client.Get(ctx, types.NamespacedName{Name: n.Name}, &node); err != nil {
		return fmt.Errorf("cluster: node %s: %w", n.Name, err)
	}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: n.IPv4.String()},
		{Type: corev1.NodeInternalIP, Address: n.IPv6.String()},
		{Type: corev1.NodeHostName, Address: n.Name},
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := c.Env.Client.Status().Update(ctx, &node); err != nil {
		return fmt.Errorf("cluster: status of node %s: %w", n.Name, err)
	}
	return nil
}

// stopProxies stops the kube-proxies; their rules go with the
// namespaces (the lab deletes those).
func (c *Cluster) stopProxies() error {
	if c == nil {
		return nil
	}
	for _, k := range c.proxies {
		k.stop()
	}
	return nil
}

// KubeProxyLog is what kube-proxy on node has printed, for failure
// reports.
func (c *Cluster) KubeProxyLog(node string) string {
	for _, k := range c.proxies {
		if k.node.Name == node {
			return k.output()
		}
	}
	return ""
}

// Ruleset is the node's nftables ruleset, as `nft list ruleset` prints it
// in the node's namespace.
func (c *Cluster) Ruleset(n *lab.Node) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", n.NS.Name, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cluster: nft list ruleset on %s: %v: %s", n.Name, err, out)
	}
	return string(out), nil
}

// Cordon marks the node unschedulable, as `kubectl drain` does first
// (uncordon with on false).
func (c *Cluster) Cordon(ctx context.Context, n *lab.Node, on bool) error {
	var node corev1.Node
	if err := c.Env.Client.Get(ctx, types.NamespacedName{Name: n.Name}, &node); err != nil {
		return fmt.Errorf("cluster: node %s: %w", n.Name, err)
	}
	node.Spec.Unschedulable = on
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnschedulable })
	if on {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	if err := c.Env.Client.Update(ctx, &node); err != nil {
		return fmt.Errorf("cluster: cordon %s: %w", n.Name, err)
	}
	return nil
}

// memberlistKey does what the installation instructions ask of a user
// when nothing in the manifests fills the speakers' memberlist Secret: it
// writes a key into it. When the controller Deployment names the Secret
// (METALLB_ML_SECRET_NAME, MetalLB's setting), the controller fills it,
// and the lab leaves that to it.
func (c *Cluster) memberlistKey(ctx context.Context) error {
	d, err := c.Manifests.Deployment("controller")
	if err != nil {
		return err
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "METALLB_ML_SECRET_NAME" {
			return nil
		}
	}
	var secret corev1.Secret
	if err := c.Env.Client.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "memberlist"}, &secret); err != nil {
		return fmt.Errorf("cluster: the memberlist Secret: %w", err)
	}
	if len(secret.Data["secretkey"]) > 0 {
		return nil
	}
	key := make([]byte, 24)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	secret.Data = map[string][]byte{"secretkey": []byte(base64.StdEncoding.EncodeToString(key))}
	if err := c.Env.Client.Update(ctx, &secret); err != nil {
		return fmt.Errorf("cluster: write the memberlist key: %w", err)
	}
	return nil
}
