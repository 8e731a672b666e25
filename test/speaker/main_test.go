// Package speaker runs several speakers in one process against the local
// control plane (test/testenv), each with its own manager and caches, as
// on separate nodes. The network side is replaced by two test doubles:
// an Announcer that records what each node answers for in one journal
// shared by all (and flags any moment two nodes answer one address), and a
// membership whose live set the test sets. Packets are tested elsewhere,
// on real sockets; here everything about Kubernetes is real.
package speaker

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steadylb/steadylb/test/testenv"
)

func TestMain(m *testing.M) {
	// Each speaker logs through its test; this silences what
	// controller-runtime logs outside any manager.
	ctrl.SetLogger(logr.Discard())
	os.Exit(testenv.RunWith(m, testenv.Options{APIServerArgs: map[string]string{
		// Dual stack, so Services may show an address of each family.
		"service-cluster-ip-range": "10.0.0.0/24,2001:db8:ffff::/112",
	}}))
}
