// Package plugin runs kubectl-steadylb as a real process against the local
// control plane, with the controller running as a process too: the
// plugin's answers must be the controller's.
package plugin

import (
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// controllerBin and pluginBin are built once for the whole suite.
var controllerBin, pluginBin string

func TestMain(m *testing.M) {
	os.Exit(proc.WithBuilt("github.com/steadylb/steadylb/cmd/controller", &controllerBin, func() int {
		return proc.WithBuilt("github.com/steadylb/steadylb/cmd/kubectl-steadylb", &pluginBin, func() int {
			return testenv.RunWith(m, testenv.Options{APIServerArgs: map[string]string{
				"service-cluster-ip-range": "10.0.0.0/24,2001:db8:ffff::/112",
			}})
		})
	}))
}
