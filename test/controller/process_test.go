package controller

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// process is one running controller and its readiness endpoint.
type process struct {
	*proc.Process
	probe string
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
	probe := proc.FreeAddr(t)
	args := append([]string{"--kubeconfig", testenv.Shared.Kubeconfig, "--namespace", testenv.Namespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe}, extra...)
	return &process{Process: proc.Start(t, binary, args...), probe: probe}
}

func (p *process) waitReady(t *testing.T) {
	t.Helper()
	if err := testenv.WaitReady(context.Background(), "http://"+p.probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("controller never became ready: %v\n%s", err, p.Output())
	}
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
