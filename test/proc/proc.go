// Package proc builds steadylb's commands and runs them as real processes
// for the test suites: output kept for the failure report, and an end by
// SIGKILL, as a crash or an OOM kill would end them.
package proc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles a command of this module, e.g.
// "github.com/steadylb/steadylb/cmd/controller", into a temporary
// directory. remove deletes it; call it when the suite ends.
func Build(pkg string) (binary string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "steadylb-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("build %s: %w", pkg, err)
	}
	remove = func() { os.RemoveAll(dir) }
	binary = filepath.Join(dir, filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", binary, pkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		remove()
		return "", nil, fmt.Errorf("build %s: %w", pkg, err)
	}
	return binary, remove, nil
}

// WithBuilt is a TestMain helper: it builds pkg, stores the binary's path
// in binary, runs the suite and removes the binary. It returns the suite's
// exit code, or 1 when the build fails.
func WithBuilt(pkg string, binary *string, suite func() int) int {
	built, remove, err := Build(pkg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	*binary = built
	return suite()
}

// Process is one running command and everything it has printed.
type Process struct {
	cmd *exec.Cmd
	// Started is when the process was started.
	Started time.Time
	// Done is closed once the process has exited.
	Done chan struct{}

	// out holds what the process printed: a file, not a pipe, so that a
	// process never waits for the test to read its output (a busy
	// benchmark would stall the speakers' log writes, and with them
	// whatever they log from), as a container runtime's log file does not.
	out *os.File

	mu      sync.Mutex
	waitErr error
}

// KeepOutputEnv names a directory: when set, every process's output is
// also written there when its test ends, failed or not, one file per
// process (named after the test, the binary and its PID), for reading a
// benchmark's speaker logs afterwards.
const KeepOutputEnv = "STEADYLB_KEEP_OUTPUT"

// Start starts binary with args. It is killed when the test ends, and its
// output is logged if the test failed.
func Start(tb testing.TB, binary string, args ...string) *Process {
	tb.Helper()
	return StartEnv(tb, nil, binary, args...)
}

// StartEnv is Start with env ("NAME=value") added to the test's own
// environment, as a container's env is; a later entry wins.
func StartEnv(tb testing.TB, env []string, binary string, args ...string) *Process {
	tb.Helper()
	out, err := os.CreateTemp("", "steadylb-out-")
	if err != nil {
		tb.Fatalf("start %s: %v", binary, err)
	}
	p := &Process{cmd: exec.Command(binary, args...), Done: make(chan struct{}), out: out}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		out.Close()
		os.Remove(out.Name())
		tb.Fatalf("start %s: %v", binary, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.Done)
	}()
	tb.Cleanup(func() {
		p.Kill()
		if tb.Failed() {
			tb.Logf("%s output:\n%s", filepath.Base(binary), p.Output())
		}
		p.keep(tb, filepath.Base(binary))
		out.Close()
		os.Remove(out.Name())
	})
	return p
}

// keep writes the output to the KeepOutputEnv directory, when it is set.
func (p *Process) keep(tb testing.TB, binary string) {
	dir := os.Getenv(KeepOutputEnv)
	if dir == "" {
		return
	}
	name := fmt.Sprintf("%s-%s-%d.log", strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name()), binary, p.Pid())
	if err := os.WriteFile(filepath.Join(dir, name), []byte(p.Output()), 0o644); err != nil {
		tb.Logf("keep the output of %s: %v", binary, err)
	}
}

// Output is everything the process has printed so far.
func (p *Process) Output() string {
	b, err := os.ReadFile(p.out.Name())
	if err != nil {
		return fmt.Sprintf("(output unreadable: %v)", err)
	}
	return string(b)
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited returns how the process ended: nil while it runs or after a clean
// exit.
func (p *Process) Exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Kill ends the process with SIGKILL and waits for it; it does nothing
// once the process has exited.
func (p *Process) Kill() {
	select {
	case <-p.Done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.Done
}

// Alive returns a context that ends when parent does or the process
// exits, whichever is first: a wait for the process to become ready then
// fails at once when it has died, with its output, instead of at the
// deadline.
func (p *Process) Alive(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-p.Done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// FreeAddr returns a loopback address whose TCP port is free now, for a
// process the test starts next. The port lies below the kernel's
// ephemeral range: a port of that range, once closed here, can go to any
// process's outgoing connection before the test's process binds it, and
// the controller then exits at once (bind: address already in use) while
// the test waits a minute for it to become ready. That happened with other
// packages' tests running beside (TestRestartFindsNoStaleReason, once).
// Outgoing connections never take ports below the range, and other
// tests' picks are spread at random over thousands.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port := FreePort(tb, func(port int) bool {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return false // taken
		}
		l.Close()
		return true
	})
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// FreePort picks a port below the kernel's ephemeral range, as FreeAddr
// does, that free reports free: whether the test can bind it now, on the
// addresses and protocols it needs (memberlist binds TCP and UDP, say).
func FreePort(tb testing.TB, free func(port int) bool) int {
	tb.Helper()
	low := ephemeralLow()
	for range 100 {
		if port := freePortMin + rand.IntN(low-freePortMin); free(port) {
			return port
		}
	}
	tb.Fatalf("no free port between %d and %d in 100 tries", freePortMin, low)
	return 0
}

// freePortMin is the lowest port FreeAddr picks: above the ports services
// listen on by convention.
const freePortMin = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= freePortMin+1000 {
		return linuxDefault
	}
	return low
}
