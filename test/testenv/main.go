package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Shared is the control plane started by Main for the current test binary.
var Shared *Env

// Main is a TestMain body: it starts the control plane, runs the tests and
// stops it. Without built binaries the whole binary fails, saying how to
// build them.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for suites with more to set up and tear
// down; it returns the exit code.
func Run(m *testing.M) int {
	return RunWith(m, Options{})
}

// RunWith is Run on a control plane started with options.
func RunWith(m *testing.M, opts Options) int {
	env, err := StartWith(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	Shared = env
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop control plane: %v\n", err)
	}
	return code
}
