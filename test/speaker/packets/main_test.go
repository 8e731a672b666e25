// Package packets runs real speaker processes in the network-namespace lab
// (test/lab) against the local control plane and asks, from the lab's
// client, with real ARP requests and neighbor solicitations, who answers
// for each address. Everything is real but the controller: the tests write
// the Services' addresses into their status themselves, and create the
// EndpointSlices, Node and Pod objects no kubelet or controller writes
// here.
//
// The benchmarks (bench_test.go, `make bench-speaker`) measure failover,
// handback overlap and the speaker's footprint on the same lab.
package packets

import (
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/testenv"
)

func TestMain(m *testing.M) {
	os.Exit(lab.Run(m, lab.MainOptions{BuildSpeaker: true, ControlPlane: testenv.Options{APIServerArgs: map[string]string{
		// Room for the benchmarks' thousand Services. ClusterIPs are
		// only written, never routed.
		"service-cluster-ip-range": "10.0.0.0/16",
	}}}))
}
