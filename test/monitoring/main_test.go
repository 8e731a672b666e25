// Package monitoring proves the chart's alerts and dashboard: every alert
// fires, and stays quiet, in the cases its unit test sets out (promtool
// test rules, on the rules as the chart renders them), and every metric a
// rule or a dashboard panel queries is one the running controller and
// speaker really export, read from their /metrics endpoints.
package monitoring

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/render"
	"github.com/steadylb/steadylb/test/testenv"
)

var (
	ctx = context.Background()
	// root is the checkout; helm renders its chart; promtool is
	// Prometheus' rule checker.
	root             string
	helm             *render.Helm
	promtool         string
	controllerBinary string
	speakerBinary    string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	helmBin, err := render.Tool(root, "helm")
	if err == nil {
		promtool, err = render.Tool(root, "promtool")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "steadylb-monitoring-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	helm = render.NewHelm(helmBin, root, dir)
	return proc.WithBuilt("github.com/steadylb/steadylb/cmd/controller", &controllerBinary, func() int {
		return proc.WithBuilt("github.com/steadylb/steadylb/cmd/speaker", &speakerBinary, func() int { return testenv.Run(m) })
	})
}
