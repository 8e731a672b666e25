package plugin

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// startController runs the controller, with extra flags, and waits until
// its startup barrier has opened and its queues are idle.
func startController(t *testing.T, flags ...string) *proc.Process {
	t.Helper()
	probe, metrics := proc.FreeAddr(t), proc.FreeAddr(t)
	p := proc.Start(t, controllerBin, append([]string{"--kubeconfig", testenv.Shared.Kubeconfig, "--namespace", testenv.Namespace,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probe}, flags...)...)
	ctx, cancel := p.Alive(context.Background())
	defer cancel()
	if err := testenv.WaitReady(ctx, "http://"+probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("controller never became ready: %v\n%s", err, p.Output())
	}
	waitIdle(t, metrics, p)
	return p
}

func waitIdle(t *testing.T, metrics string, p *proc.Process) {
	t.Helper()
	if err := scrape.WaitIdle(t.Context(), "http://"+metrics+"/metrics", time.Minute); err != nil {
		t.Fatalf("the controller never became idle: %v\n%s", err, p.Output())
	}
}

// namespace creates a namespace with a fixed name, so golden files can
// name it.
func namespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := testenv.Shared.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// served creates a Service and waits until the controller has judged it,
// so that Services are decided in the order the test creates them.
func served(t *testing.T, ns, name string, opts ...fixture.ServiceOption) {
	t.Helper()
	fixture.Service(t, ns, name, opts...)
	fixture.WaitFor(t, "a condition on "+ns+"/"+name, func() bool { return condition(t, ns, name) != nil })
}

func condition(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	svc := &corev1.Service{}
	if err := testenv.Shared.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		return nil
	}
	return meta.FindStatusCondition(svc.Status.Conditions, assign.ConditionAddressAssigned)
}

// port replaces the Service's one port.
func port(protocol corev1.Protocol, n int32) fixture.ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Ports[0].Protocol, s.Spec.Ports[0].Port = protocol, n
	}
}

// result is what one run of the plugin printed, and its exit code.
type result struct {
	stdout, stderr string
	code           int
	// cpu is the process's user and system time.
	cpu time.Duration
}

// cpuOf is an exited process's user and system time.
func cpuOf(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// plugin runs kubectl-steadylb with the suite's kubeconfig.
func plugin(t *testing.T, args ...string) result {
	t.Helper()
	return pluginAs(t, testenv.Shared.Kubeconfig, args...)
}

func pluginAs(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return runPlugin(t, kubeconfig, args...)
}

func runPlugin(t testing.TB, kubeconfig string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), pluginBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if cmd.ProcessState != nil {
		r.cpu = cpuOf(cmd.ProcessState)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run kubectl-steadylb %v: %v", args, err)
	}
	return r
}

// succeed runs the plugin and fails the test unless it exits 0.
func succeed(t *testing.T, args ...string) string {
	t.Helper()
	r := plugin(t, args...)
	if r.code != 0 {
		t.Fatalf("kubectl-steadylb %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// timestamps vary from run to run; golden files show them as <time>.
var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// golden compares output with testdata/name, or rewrites the file with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = timestamps.ReplaceAllString(got, "<time>")
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update if the change is right)\n--- want\n%s--- got\n%s", path, want, got)
	}
}
