// Package bench measures the controller end to end on the local control
// plane (a real kube-apiserver and etcd, see test/testenv), for the two
// controller targets in BENCHMARKS.md:
//
//   - allocating N Services runs at the API server's write rate: the time
//     the controller binary takes, from process start, to give N pending
//     Services their address, against two floors measured on their own
//     control plane in the same run by a plain client that already knows
//     the addresses, one Service after the other: writing only each
//     Service's status (the floor of any controller), and writing the
//     status and creating the IPAllocated event (the floor of a
//     MetalLB-compatible one, which the benchmark holds the controller to
//     within 1.05x of); for reference, the same client making MetalLB's
//     three requests;
//   - a restart with N assigned Services makes no Service write and settles
//     within a small constant of cache sync.
//
// A third phase creates Services while the controller runs, the everyday
// path, and reports how far the controller lags behind the creator. Each
// phase logs the API requests it caused per Service and the CPU time of
// every process, which is where to look for where the time went.
//
// Only benchmarks live here, run with -benchtime 1x (one iteration is
// minutes of work, not a loop to time); see BENCHMARKS.md, "Controller end
// to end", and `make bench-controller`. Without -bench the package does
// nothing, so `go test ./...` stays cheap.
package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steadylb/steadylb/test/proc"
)

// binary is the controller built once for the whole run.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	// envtest logs through controller-runtime, which otherwise prints a
	// stack trace into the benchmark output to say no logger was set.
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	built, remove, err := proc.Build("github.com/steadylb/steadylb/cmd/controller")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = built
	// A configuration line (benchfmt "key: value") that ties the figures
	// to the code they measured; others edit the tree while this runs.
	if commit := sourceVersion(); commit != "" {
		fmt.Printf("steadylb-commit: %s\n", commit)
	}
	code := m.Run()
	remove()
	os.Exit(code)
}

// sourceVersion names the checked-out commit, marked "+modified" when the
// controller's sources differ from it; empty without git.
func sourceVersion() string {
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(string(head))
	changed, err := exec.Command("git", "status", "--porcelain", "--", "../../cmd", "../../internal", "../../api").Output()
	if err == nil && len(bytes.TrimSpace(changed)) > 0 {
		v += "+modified"
	}
	return v
}
