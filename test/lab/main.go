package lab

import (
	"fmt"
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// Shared is the lab Run built for the current test binary; nil where
// labs are unavailable.
var Shared *Lab

// SpeakerEnv names a speaker binary that Run uses instead of building
// cmd/speaker, e.g. one built from an earlier commit, for a before and
// after figure with the same suites and benchmarks.
const SpeakerEnv = "STEADYLB_SPEAKER"

// MetalLBEnv, set to any value with SpeakerEnv, says that binary is
// MetalLB's speaker (Options.MetalLB).
const MetalLBEnv = "STEADYLB_SPEAKER_IS_METALLB"

// MainOptions configure Run.
type MainOptions struct {
	// ControlPlane adjusts the control plane Run starts.
	ControlPlane testenv.Options
	// Lab configures the lab; Env is filled in by Run, and Speaker too
	// when BuildSpeaker is set.
	Lab Options
	// BuildSpeaker builds cmd/speaker once for the binary.
	BuildSpeaker bool
}

// Run is a TestMain body for suites on a lab: it builds the speaker,
// starts the control plane (testenv.Shared), builds the lab (Shared), runs
// the tests and takes everything down, returning the exit code. Where labs
// are unavailable it runs the tests with neither, and Require skips them.
func Run(m *testing.M, opts MainOptions) int {
	if Unavailable() != "" {
		return m.Run()
	}
	if !opts.BuildSpeaker {
		return runWithControlPlane(m, opts)
	}
	if bin := os.Getenv(SpeakerEnv); bin != "" {
		opts.Lab.Speaker = bin
		opts.Lab.MetalLB = os.Getenv(MetalLBEnv) != ""
		return runWithControlPlane(m, opts)
	}
	return proc.WithBuilt("github.com/steadylb/steadylb/cmd/speaker", &opts.Lab.Speaker, func() int {
		return runWithControlPlane(m, opts)
	})
}

func runWithControlPlane(m *testing.M, opts MainOptions) int {
	env, err := testenv.StartWith(opts.ControlPlane)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	testenv.Shared = env
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop control plane: %v\n", err)
		}
	}()
	opts.Lab.Env = env
	if Shared, err = New(opts.Lab); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := Shared.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: take the lab down: %v\n", err)
		code = 1
	}
	return code
}

// Require returns Shared, or skips tb with the reason labs are unavailable
// here.
func Require(tb testing.TB) *Lab {
	tb.Helper()
	if reason := Unavailable(); reason != "" {
		tb.Skip(reason)
	}
	if Shared == nil {
		tb.Fatal("lab: no lab; call lab.Run from TestMain")
	}
	return Shared
}
