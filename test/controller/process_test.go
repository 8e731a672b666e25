package controller

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

// process is one running controller, its readiness and metrics endpoints.
type process struct {
	*proc.Process
	probe, metrics string
}

// startController starts the controller binary and waits until it reports
// ready (its startup barrier has opened) and then idle (the reconciles
// queued at start are done, so late writes cannot escape a check). It is
// killed when the test ends.
func startController(t *testing.T, extra ...string) *process {
	t.Helper()
	p := launchController(t, extra...)
	p.waitReady(t)
	p.waitIdle(t)
	return p
}

// launchController starts the controller binary without waiting for it.
func launchController(t *testing.T, extra ...string) *process {
	t.Helper()
	probe, metrics := proc.FreeAddr(t), proc.FreeAddr(t)
	if i := slices.Index(extra, "--metrics-bind-address"); i >= 0 && i+1 < len(extra) {
		metrics = extra[i+1]
	}
	args := append([]string{"--kubeconfig", testenv.Shared.Kubeconfig, "--namespace", testenv.Namespace,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probe}, extra...)
	return &process{Process: proc.Start(t, binary, args...), probe: probe, metrics: metrics}
}

// waitIdle waits until the controller's work queues have been empty, with
// no reconcile running, on three scrapes in a row.
func (p *process) waitIdle(t *testing.T) {
	t.Helper()
	ctx, cancel := p.Alive(t.Context())
	defer cancel()
	if err := scrape.WaitIdle(ctx, "http://"+p.metrics+"/metrics", time.Minute); err != nil {
		t.Fatalf("the controller never became idle: %v\n%s", err, p.Output())
	}
}

func (p *process) waitReady(t *testing.T) {
	t.Helper()
	ctx, cancel := p.Alive(context.Background())
	defer cancel()
	if err := testenv.WaitReady(ctx, "http://"+p.probe+"/readyz", time.Minute); err != nil {
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
