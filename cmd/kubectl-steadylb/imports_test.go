package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the plugin off controller-runtime: its package init
// alone cost every command 12 to 15 ms (BENCHMARKS.md), and the plugin
// only lists. It decides through internal/assign, without the
// controller's reconcilers. Nor cli-runtime, for kubectl's flags (see
// kubeFlags): it links kustomize, half the plugin's binary, loaded at
// every start.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/steadylb/steadylb/cmd/kubectl-steadylb" {
		t.Fatalf("go list -deps did not end with the plugin itself; got %d packages", len(deps))
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") || dep == "github.com/steadylb/steadylb/internal/controller" ||
			strings.HasPrefix(dep, "k8s.io/cli-runtime") || strings.HasPrefix(dep, "sigs.k8s.io/kustomize") {
			t.Errorf("kubectl-steadylb imports %s", dep)
		}
	}
}
