package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
)

// The speakers' HTTP ports on their node's address, MetalLB's metrics
// port and cmd/speaker's probe port.
const (
	MetricsPort = "7472"
	ProbePort   = "7474"
)

// Speaker is a speaker process running in a node's namespace.
type Speaker struct {
	*proc.Process
	Node *Node
}

// Start runs the speaker binary in the node's namespace, as a DaemonSet
// Pod on the host network would run: --node-name, --host and
// --ml-bindaddr are the node's, --pod-name its speaker Pod, the kubeconfig
// the test's (through the forwarder). extra flags come last and so win.
// It does not wait; see WaitReady. The process is killed when tb ends.
func (n *Node) Start(tb testing.TB, extra ...string) *Speaker {
	tb.Helper()
	if n.lab.opts.Speaker == "" {
		tb.Fatal("lab: no speaker binary (Options.Speaker)")
	}
	host := n.IPv4.String()
	args := []string{"netns", "exec", n.NS.Name, n.lab.opts.Speaker,
		"--kubeconfig", n.lab.opts.Env.Kubeconfig,
		"--namespace", n.lab.opts.Namespace,
		"--node-name", n.Name, "--pod-name", n.PodName(),
		"--ml-bindaddr", host,
	}
	if n.lab.opts.MetalLB {
		// MetalLB v0.15 serves only its metrics, over HTTP on
		// --host:--port; WaitReady waits for them.
		args = append(args, "--host", host, "--port", MetricsPort,
			"--ml-labels", "app=metallb,component=speaker", "--log-level", "warn")
	} else {
		args = append(args, "--host", host,
			"--metrics-bind-address", net.JoinHostPort(host, MetricsPort),
			"--health-probe-bind-address", net.JoinHostPort(host, ProbePort))
	}
	return &Speaker{Process: proc.Start(tb, "ip", append(args, extra...)...), Node: n}
}

// EvictSpeaker drops the speaker binary's pages from the page cache, so
// that the speakers started next map it as after a node's boot: only
// what they run is read back. A binary just written by the linker is
// whole in the page cache, and this kernel then maps it in large folios,
// most of it resident whatever runs; for a footprint that compares two
// binaries, both must start alike. Pages of a running speaker stay.
func (l *Lab) EvictSpeaker() error {
	f, err := os.Open(l.opts.Speaker)
	if err != nil {
		return fmt.Errorf("lab: evict the speaker binary: %w", err)
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("lab: evict the speaker binary: %w", err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("lab: evict the speaker binary: %w", err)
	}
	return nil
}

// MetalLB says the process is MetalLB's speaker (Options.MetalLB): its
// metrics are MetalLB's own, without cmd/speaker's.
func (s *Speaker) MetalLB() bool { return s.Node.lab.MetalLB() }

// Term sends SIGTERM, as the kubelet does to stop a Pod. It does not wait.
func (s *Speaker) Term() error {
	if err := syscall.Kill(s.Pid(), syscall.SIGTERM); err != nil {
		return fmt.Errorf("lab: SIGTERM to the speaker on %s: %w", s.Node.Name, err)
	}
	return nil
}

// Running reports whether the process has not exited yet.
func (s *Speaker) Running() bool {
	select {
	case <-s.Done:
		return false
	default:
		return true
	}
}

// MetricsURL and ReadyURL are the speaker's endpoints, reachable from the
// lab's client (Client.Get, Client.Scrape).
func (s *Speaker) MetricsURL() string {
	return "http://" + net.JoinHostPort(s.Node.IPv4.String(), MetricsPort) + "/metrics"
}

func (s *Speaker) ReadyURL() string {
	return "http://" + net.JoinHostPort(s.Node.IPv4.String(), ProbePort) + "/readyz"
}

// WaitReady waits until the speaker's readiness check passes (it has
// applied its first decisions), or fails when it exits or ctx ends.
func (s *Speaker) WaitReady(ctx context.Context) error {
	url := s.ReadyURL()
	if s.MetalLB() {
		url = s.MetricsURL()
	}
	for {
		if _, err := s.Node.lab.Client.Get(ctx, url); err == nil {
			return nil
		}
		select {
		case <-s.Done:
			return fmt.Errorf("lab: the speaker on %s exited before it was ready: %v\n%s", s.Node.Name, s.Exited(), s.Output())
		case <-ctx.Done():
			return fmt.Errorf("lab: the speaker on %s never became ready: %w\n%s", s.Node.Name, ctx.Err(), s.Output())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Metrics scrapes the speaker from the lab's client.
func (s *Speaker) Metrics(ctx context.Context) (scrape.Samples, error) {
	return s.Node.lab.Client.Scrape(ctx, s.MetricsURL())
}

// Usage is what a process has consumed so far.
type Usage struct {
	// CPU is user plus system time.
	CPU time.Duration
	// PeakRSS is the high-water mark of the resident set (VmHWM), bytes.
	PeakRSS int64
	// AnonRSS and FileRSS split the resident set at the time of reading
	// (RssAnon, RssFile), bytes: the heap and stacks, and the mapped
	// pages of the binary, which the kernel maps in large folios and
	// which a smaller heap cannot shrink.
	AnonRSS, FileRSS int64
}

// Usage reads the running process's CPU time and peak RSS from /proc.
func (s *Speaker) Usage() (Usage, error) {
	return ProcessUsage(s.Pid())
}

// userHZ is the unit of the times in /proc/<pid>/stat, fixed by the
// kernel's ABI.
const userHZ = 100

// ProcessUsage reads pid's CPU time and resident set from /proc.
func ProcessUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("lab: usage of %d: %w", pid, err)
	}
	// The command name may hold spaces; the fields after its ")" do not.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	// After the name: state(3) ... utime(14) stime(15), so indexes 11 and 12.
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("lab: usage of %d: short /proc stat", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("lab: usage of %d: %w", pid, err)
		}
		ticks += v
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("lab: usage of %d: %w", pid, err)
	}
	u := Usage{CPU: time.Duration(ticks) * time.Second / userHZ}
	resident := map[string]*int64{"VmHWM:": &u.PeakRSS, "RssAnon:": &u.AnonRSS, "RssFile:": &u.FileRSS}
	for _, line := range strings.Split(string(status), "\n") {
		name, rest, _ := strings.Cut(line, "\t")
		field, ok := resident[name]
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("lab: usage of %d: %s %w", pid, name, err)
		}
		*field = kb << 10
	}
	return u, nil
}
