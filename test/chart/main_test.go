// Package chart proves the Helm chart charts/steadylb: it passes
// `helm lint` and renders with Helm v4 and v3; a values file written for
// MetalLB's chart renders the same intent, key by key; the schema refuses
// typos; every rendered object passes a server-side dry run on the local
// API server; an upgrade keeps the memberlist key the controller wrote;
// the ValidatingAdmissionPolicy refuses exactly the pool addresses the
// configuration model refuses and objects outside the namespace; and the
// chart and config/default install the same objects (names, RBAC rules,
// container args, env, probes, security contexts).
package chart

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/render"
	"github.com/steadylb/steadylb/test/testenv"
)

// ns is the namespace the suites install into: MetalLB's, the default.
const ns = testenv.Namespace

var (
	ctx = context.Background()
	// helm and helm3 are Helm v4 and v3 on this checkout's chart.
	helm, helm3 *render.Helm
	root        string
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
	dir, err := os.MkdirTemp("", "steadylb-chart-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	for _, h := range []struct {
		tool string
		dst  **render.Helm
	}{{"helm", &helm}, {"helm3", &helm3}} {
		bin, err := render.Tool(root, h.tool)
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		*h.dst = render.NewHelm(bin, root, dir+"/"+h.tool)
	}
	return testenv.Run(m)
}

// template renders the chart with Helm v4 into ns.
func template(t *testing.T, args ...string) render.Objects {
	t.Helper()
	objs, err := helm.Template(ns, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// values returns the path of a values file in testdata.
func values(name string) string { return "testdata/" + name }
