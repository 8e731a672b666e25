// Command demo runs steadylb for real on the local control plane: it starts
// kube-apiserver and etcd with the CRDs, starts the controller, applies a
// sample pool and Services, restarts the controller with SIGKILL to show
// that nothing moves, and leaves everything running until interrupted.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/steadylb/steadylb/test/testenv"
)

const probe = "127.0.0.1:18081"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer env.Stop()
	bin := filepath.Join(os.TempDir(), "steadylb-demo-controller")
	if err := sh(exec.Command("go", "build", "-o", bin, "./cmd/controller")); err != nil {
		return fmt.Errorf("build controller: %w", err)
	}
	step("starting the controller")
	ctl, err := startController(env, bin)
	if err != nil {
		return err
	}
	step("applying a pool and four Services (hack/demo/sample.yaml)")
	if err := sh(env.KubectlCmd("apply", "-f", filepath.Join(env.RepoRoot, "hack", "demo", "sample.yaml"))); err != nil {
		return err
	}
	if err := waitAssigned(env); err != nil {
		return err
	}
	if err := show(env); err != nil {
		return err
	}
	step("killing the controller with SIGKILL and starting it again")
	_ = ctl.Process.Kill()
	_ = ctl.Wait()
	if ctl, err = startController(env, bin); err != nil {
		return err
	}
	step("after the restart: same addresses, same resourceVersions (no writes)")
	if err := show(env); err != nil {
		return err
	}
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

func startController(env *testenv.Env, bin string) (*exec.Cmd, error) {
	logs, err := os.Create(filepath.Join(os.TempDir(), "steadylb-demo-controller.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--metrics-bind-address", "127.0.0.1:17472",
		"--health-probe-bind-address", probe)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start controller: %w", err)
	}
	fmt.Printf("controller logs: %s\n", logs.Name())
	if err := testenv.WaitReady(context.Background(), "http://"+probe+"/readyz", time.Minute); err != nil {
		return nil, fmt.Errorf("controller did not become ready: %w", err)
	}
	return cmd, nil
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
