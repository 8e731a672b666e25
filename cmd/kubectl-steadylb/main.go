// Command kubectl-steadylb is a kubectl plugin that answers, read-only,
// which address belongs to which Service, why a Service has none, and
// whether a cluster served by MetalLB can switch to steadylb. Its answers
// come from internal/inspect, which runs the controller's own decisions;
// this command only takes flags and prints.
//
// Exit codes: 0 done; 1 migrate found a change; 2 an error (bad input, a
// missing CRD, a permission the plugin lacks).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/steadylb/steadylb/internal/inspect/servicelist"
)

// errChanges is returned by migrate when switching would change an
// address: the report is printed, the exit code is 1.
var errChanges = errors.New("switching to steadylb would change addresses")

func main() {
	servicelist.ShortLivedGC()
	// Buffered: a table of 10,000 rows is otherwise 10,000 small writes,
	// one per row; and in 64 KiB, the addresses table of 10,000 rows (630
	// KB) is 10 writes instead of 154.
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	prof, err := startProfile()
	if err == nil {
		err = newRoot(out, os.Stderr, prof).Execute()
	}
	prof.phase("flush", func() {
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
	})
	if perr := prof.stop(); err == nil {
		err = perr
	}
	switch {
	case err == nil:
	case errors.Is(err, errChanges):
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}
