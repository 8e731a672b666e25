package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/steadylb/steadylb/test/lab"
)

// ErrKubeProxyUnavailable is returned by Run when hack/kube-proxy.sh has not
// built kube-proxy.
var ErrKubeProxyUnavailable = errors.New("kube-proxy not built: run hack/kube-proxy.sh once (it reuses the control plane's build cache)")

// KubeProxyPath returns the binary hack/kube-proxy.sh builds, or
// ErrKubeProxyUnavailable. $KUBE_PROXY overrides it.
func KubeProxyPath(repoRoot string) (string, error) {
	if p := os.Getenv("KUBE_PROXY"); p != "" {
		return p, nil
	}
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "kube-proxy.sh"), "--path").Output()
	if err != nil {
		return "", fmt.Errorf("ask hack/kube-proxy.sh for the binary: %w", err)
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w (%v)", ErrKubeProxyUnavailable, err)
	}
	return path, nil
}

// The ports kube-proxy serves on a node: its health check (what a cloud
// load balancer asks, and the node-level part of every Local Service's
// health check node port) and its metrics, on the loopback.
const (
	KubeProxyHealthPort  = 10256
	KubeProxyMetricsPort = 10249
)

// kubeProxy is kube-proxy running in a node's namespace for the whole
// test binary.
type kubeProxy struct {
	node *lab.Node
	cmd  *exec.Cmd
	done chan struct{}

	mu  sync.Mutex
	out bytes.Buffer
}

func (k *kubeProxy) Write(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out.Write(b)
}

func (k *kubeProxy) output() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out.String()
}

// kubeProxyConfig is the node's KubeProxyConfiguration: nftables mode
// (iptables with mode "iptables"), the lab's pod networks as the cluster
// CIDRs (so traffic from outside them is masqueraded under Cluster
// policy), and nothing that changes the namespace's conntrack sysctls
// (kube-proxy would otherwise size the conntrack table for the machine).
func kubeProxyConfig(node, mode, kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: %s
clusterCIDR: %s,%s
healthzBindAddress: 0.0.0.0:%d
metricsBindAddress: 127.0.0.1:%d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`, kubeconfig, node, mode, lab.PodSubnets4, lab.PodSubnets6, KubeProxyHealthPort, KubeProxyMetricsPort)
}

// startKubeProxy runs kube-proxy in n's namespace with the suite's
// kubeconfig (which reaches the API server through the node's forwarder).
func startKubeProxy(binary, dir string, n *lab.Node, mode, kubeconfig string) (*kubeProxy, error) {
	cfg := filepath.Join(dir, "kube-proxy-"+n.Name+".yaml")
	if err := os.WriteFile(cfg, []byte(kubeProxyConfig(n.Name, mode, kubeconfig)), 0o644); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	k := &kubeProxy{node: n, done: make(chan struct{})}
	k.cmd = exec.Command("ip", "netns", "exec", n.NS.Name, binary, "--config", cfg, "--v", "2")
	k.cmd.Stdout, k.cmd.Stderr = k, k
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cluster: start kube-proxy on %s: %w", n.Name, err)
	}
	go func() {
		_ = k.cmd.Wait()
		close(k.done)
	}()
	return k, nil
}

// waitHealthy waits until kube-proxy's health check answers 200 (it has
// synced its rules), or fails when it exits or ctx ends.
func (k *kubeProxy) waitHealthy(ctx context.Context, c *lab.Client) error {
	url := fmt.Sprintf("http://%s:%d/healthz", k.node.IPv4, KubeProxyHealthPort)
	for {
		if _, err := c.Get(ctx, url); err == nil {
			return nil
		}
		select {
		case <-k.done:
			return fmt.Errorf("cluster: kube-proxy on %s exited: %v\n%s", k.node.Name, k.cmd.ProcessState, k.output())
		case <-ctx.Done():
			return fmt.Errorf("cluster: kube-proxy on %s never became healthy: %w\n%s", k.node.Name, ctx.Err(), k.output())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends kube-proxy with SIGTERM and waits.
func (k *kubeProxy) stop() {
	select {
	case <-k.done:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}
