package controller

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/testenv"
)

// process is one running controller.
type process struct {
	cmd   *exec.Cmd
	probe string
	mu    sync.Mutex
	out   bytes.Buffer
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startController starts the controller binary and waits until it reports
// ready (its startup barrier has opened). It is killed when the test ends.
func startController(t *testing.T, extra ...string) *process {
	t.Helper()
	p := launchController(t, extra...)
	p.waitReady(t)
	return p
}

// launchController starts the controller binary without waiting for it.
func launchController(t *testing.T, extra ...string) *process {
	t.Helper()
	p := &process{probe: freeAddr(t)}
	args := append([]string{"--kubeconfig", testenv.Shared.Kubeconfig, "--namespace", testenv.Namespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", p.probe}, extra...)
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start controller: %v", err)
	}
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			t.Logf("controller output:\n%s", p.output())
		}
	})
	return p
}

// ready reports whether the controller's readiness check passes now.
func (p *process) ready() bool {
	resp, err := http.Get("http://" + p.probe + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (p *process) waitReady(t *testing.T) {
	t.Helper()
	if err := testenv.WaitReady(context.Background(), "http://"+p.probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("controller never became ready: %v\n%s", err, p.output())
	}
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr())
}
