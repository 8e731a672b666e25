// Package manifests proves that the deployment manifests in config/ are
// usable as shipped: config/default renders with kubectl's built-in
// kustomize and a real API server accepts every object in it; the
// Deployment meets the restricted Pod Security level; and the controller
// binary, run with the Deployment's arguments under the identity of the
// manifests' ServiceAccount with only the manifests' RBAC, does its whole
// job (leader election, allocation, annotation, pool status,
// ConfigurationState, events) without one forbidden request, while RBAC
// really is enforced on that identity. The same holds for the speaker
// DaemonSet and its identity.
package manifests

import (
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// binary and speakerBinary are the commands, built once for the whole
// suite.
var binary, speakerBinary string

func TestMain(m *testing.M) {
	os.Exit(proc.WithBuilt("github.com/steadylb/steadylb/cmd/controller", &binary, func() int {
		return proc.WithBuilt("github.com/steadylb/steadylb/cmd/speaker", &speakerBinary, func() int { return testenv.Run(m) })
	}))
}
