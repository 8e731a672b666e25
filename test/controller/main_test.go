// Package controller runs the controller binary as a real process against
// the local control plane, kills it with SIGKILL, and checks the invariants
// of the design: no valid holder moves, no address is held twice.
package controller

import (
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// binary is the controller built once for the whole suite.
var binary string

func TestMain(m *testing.M) {
	os.Exit(proc.WithBuilt("github.com/steadylb/steadylb/cmd/controller", &binary, func() int {
		return testenv.RunWith(m, testenv.Options{APIServerArgs: map[string]string{
			// Dual stack, so Services can ask for both families. ClusterIPs
			// are never routed here; they come from documentation prefixes.
			"service-cluster-ip-range": "10.0.0.0/24,2001:db8:ffff::/112",
		}})
	}))
}
