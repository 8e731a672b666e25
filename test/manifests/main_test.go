// Package manifests proves that the deployment manifests in config/ are
// usable as shipped: config/default renders with kubectl's built-in
// kustomize and a real API server accepts every object in it; the
// Deployment meets the restricted Pod Security level; and the controller
// binary, run with the Deployment's arguments under the identity of the
// manifests' ServiceAccount with only the manifests' RBAC, does its whole
// job (leader election, allocation, annotation, pool status,
// ConfigurationState, events) without one forbidden request, while RBAC
// really is enforced on that identity.
package manifests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/steadylb/steadylb/test/testenv"
)

// binary is the controller built once for the whole suite.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "steadylb-manifests-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create build directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "controller")
	build := exec.Command("go", "build", "-o", binary, "github.com/steadylb/steadylb/cmd/controller")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build controller:", err)
		return 1
	}
	return testenv.Run(m)
}
