// Command demo runs steadylb for real on the local control plane. As root
// (with the CNI plugins, nftables and kube-proxy built) it runs the whole
// product on the network-namespace lab cluster (test/cluster): steadylb
// from its manifests, a request to a Service's address answered by a Pod,
// the announcing speaker killed and the next request answered through the
// new node, and a controller restart that writes nothing. Elsewhere it
// starts kube-apiserver and etcd with the CRDs, starts the controller,
// applies a sample pool and Services, restarts the controller with SIGKILL
// to show that nothing moves, says what it skipped and why, and leaves
// everything running until interrupted.
package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

const (
	probe   = "127.0.0.1:18081"
	metrics = "127.0.0.1:17472"
)

func main() {
	// The control plane's client logs nothing the demo needs.
	ctrllog.SetLogger(logr.Discard())
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	reason := labUnavailable(root)
	if reason == "" {
		return runLab()
	}
	step("running the controller-only demo. Skipped: the lab cluster (speakers, kube-proxy, Pods and a request " +
		"through the announced address), because it " + reason)
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer env.Stop()
	bin := filepath.Join(os.TempDir(), "steadylb-demo-controller")
	if err := sh(exec.Command("go", "build", "-o", bin, "./cmd/controller")); err != nil {
		return fmt.Errorf("build controller: %w", err)
	}
	step("starting the controller before any pool exists: it waits, unready, and says why")
	ctl, err := launchController(env, bin)
	if err != nil {
		return err
	}
	// Whatever happens below, no controller outlives the demo.
	defer func() { _ = ctl.Process.Kill(); _ = ctl.Wait() }()
	if err := waitNoPoolsReported(env); err != nil {
		return err
	}
	step("applying a pool and four Services (hack/demo/sample.yaml)")
	if err := sh(env.KubectlCmd("apply", "-f", filepath.Join(env.RepoRoot, "hack", "demo", "sample.yaml"))); err != nil {
		return err
	}
	if err := waitReady(); err != nil {
		return err
	}
	if err := waitAssigned(env); err != nil {
		return err
	}
	if err := show(env); err != nil {
		return err
	}
	before, err := snapshot(env)
	if err != nil {
		return err
	}
	step("killing the controller with SIGKILL and starting it again")
	_ = ctl.Process.Kill()
	_ = ctl.Wait()
	if ctl, err = launchController(env, bin); err != nil {
		return err
	}
	if err := waitReady(); err != nil {
		return err
	}
	if err := waitIdle(); err != nil {
		return err
	}
	step("after the restart")
	if err := show(env); err != nil {
		return err
	}
	after, err := snapshot(env)
	if err != nil {
		return err
	}
	compare(before, after)
	fmt.Printf("\nsteadylb is running. Point kubectl at it:\n\n  export KUBECONFIG=%s\n  %s get svc -A\n\nPress Ctrl-C to stop.\n",
		env.Kubeconfig, env.Kubectl)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	_ = ctl.Process.Signal(syscall.SIGTERM)
	_ = ctl.Wait()
	return nil
}

func step(s string) { fmt.Printf("\n==> %s\n", s) }

func sh(cmd *exec.Cmd) error {
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func launchController(env *testenv.Env, bin string) (*exec.Cmd, error) {
	logs, err := os.Create(filepath.Join(os.TempDir(), "steadylb-demo-controller.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--metrics-bind-address", metrics,
		"--health-probe-bind-address", probe)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start controller: %w", err)
	}
	fmt.Printf("controller logs: %s\n", logs.Name())
	return cmd, nil
}

func waitReady() error {
	if err := testenv.WaitReady(context.Background(), "http://"+probe+"/readyz", time.Minute); err != nil {
		return fmt.Errorf("controller did not become ready: %w", err)
	}
	return nil
}

// waitNoPoolsReported waits for the controller's ConfigurationState to say
// that no pool exists, and prints it.
func waitNoPoolsReported(env *testenv.Env) error {
	var summary []byte
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) {
			out, err := env.KubectlCmd("get", "configurationstate", "-n", testenv.Namespace, "controller",
				"-o", "jsonpath={.status.result}: {.status.errorSummary}").Output()
			summary = out
			return err == nil && strings.Contains(string(out), "no IPAddressPool"), nil
		})
	if err != nil {
		return fmt.Errorf("controller never reported the missing pools: %w", err)
	}
	fmt.Printf("ConfigurationState controller: %s\n", summary)
	return nil
}

// waitAssigned waits until web has its address and the pool status counts
// it; the controller writes pool status at most once a second.
func waitAssigned(env *testenv.Env) error {
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) {
			ip, err := env.KubectlCmd("get", "svc", "web", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}").Output()
			if err != nil || len(ip) == 0 {
				return false, nil
			}
			assigned, err := env.KubectlCmd("get", "ipaddresspools", "-n", testenv.Namespace, "demo",
				"-o", "jsonpath={.status.assignedIPv4}").Output()
			return err == nil && len(assigned) > 0 && string(assigned) != "0", nil
		})
}

func show(env *testenv.Env) error {
	cols := "NAME:.metadata.name,ADDRESS:.status.loadBalancer.ingress[*].ip," +
		"POOL:.metadata.annotations.metallb\\.io/ip-allocated-from-pool," +
		"REASON:.status.conditions[?(@.type=='steadylb.io/AddressAssigned')].reason," +
		"RV:.metadata.resourceVersion"
	if err := sh(env.KubectlCmd("get", "svc", "-n", "default", "-l", "!component", "-o", "custom-columns="+cols)); err != nil {
		return err
	}
	return sh(env.KubectlCmd("get", "ipaddresspools", "-n", testenv.Namespace,
		"-o", "custom-columns=POOL:.metadata.name,ASSIGNED:.status.assignedIPv4,AVAILABLE:.status.availableIPv4"))
}

// serviceState is what a restart must not change: the addresses, and the
// resourceVersion, which moves with any write at all.
type serviceState struct{ addresses, resourceVersion string }

func snapshot(env *testenv.Env) (map[string]serviceState, error) {
	var list corev1.ServiceList
	if err := env.Client.List(context.Background(), &list, client.InNamespace("default")); err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	out := map[string]serviceState{}
	for _, svc := range list.Items {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		out[svc.Name] = serviceState{strings.Join(ips, ","), svc.ResourceVersion}
	}
	return out, nil
}

// compare prints, per Service, whether the restart moved or wrote it.
func compare(before, after map[string]serviceState) {
	names := slices.Sorted(maps.Keys(before))
	moved, written := 0, 0
	for _, name := range names {
		b, a := before[name], after[name]
		verdict := "unchanged"
		switch {
		case b.addresses != a.addresses:
			verdict = fmt.Sprintf("MOVED from %q to %q", b.addresses, a.addresses)
			moved++
		case b.resourceVersion != a.resourceVersion:
			verdict = fmt.Sprintf("written (resourceVersion %s -> %s)", b.resourceVersion, a.resourceVersion)
			written++
		}
		fmt.Printf("  %-16s %-16s %s\n", name, orNone(a.addresses), verdict)
	}
	fmt.Printf("the restart moved %d and wrote %d of %d Services\n", moved, written+moved, len(names))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// waitIdle waits until the restarted controller has done the reconciles
// queued at its start, so the comparison sees any write they make.
func waitIdle() error {
	return scrape.WaitIdle(context.Background(), "http://"+metrics+"/metrics", time.Minute)
}
