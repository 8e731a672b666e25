package cluster_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/load"
	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
)

// The lab's LoadBalancer addresses: on segment a, so the client asks for
// them with ARP. Each test takes its own, so no client cache carries over.
func labAddress(i int) string {
	return netip.AddrFrom4([4]byte{198, 51, 100, byte(100 + i)}).String() + "/32"
}

// answered waits until a request to url from the client gets an answer.
func answered(t testing.TB, c *cluster.Cluster, url string) {
	t.Helper()
	fixture.WaitFor(t, "an answer from "+url, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := c.Lab.Client.Get(ctx, url)
		return err == nil
	})
}

// Request timeouts. Benchmarks give each request 1 s, the figure users
// feel. Tests give it 2 s: they assert that no request fails, and on a
// machine whose load average is far above its cores a process can wait
// more than a second for the CPU (the backend, the load generator), which
// is no failure of the path the test checks; a request that finds no path
// still fails (a TCP connection whose first SYN is lost needs 1 s more).
const (
	benchTimeout = time.Second
	testTimeout  = 2 * time.Second
)

// startLoad waits until kube-proxy has rules for addr on every node (see
// Cluster.WaitProxied) and addr answers, then starts the load on it.
func startLoad(t testing.TB, c *cluster.Cluster, addr netip.Addr, rate int) *load.Traffic {
	t.Helper()
	c.WaitProxied(t, addr)
	url := cluster.URL(addr)
	answered(t, c, url)
	timeout := testTimeout
	if _, ok := t.(*testing.B); ok {
		timeout = benchTimeout
	}
	return load.Start(t, c.Loadgen(), c.Lab.Client.NS, load.Options{URL: url, Rate: rate, Timeout: timeout})
}

// await waits until n more requests than now have been answered, with a
// deadline.
func await(t testing.TB, tr *load.Traffic, what string, n int, ok func(load.Result) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := tr.Await(ctx, what, func(res []load.Result) bool { return load.Tally(res, ok) >= n }); err != nil {
		t.Fatal(err)
	}
}

func succeeded(r load.Result) bool { return r.OK() }

func stop(t testing.TB, tr *load.Traffic) load.Report {
	t.Helper()
	_, rep, err := tr.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load: %v", rep)
	for _, f := range rep.Failures {
		t.Logf("failed: sent %s, after %v (generator stalled %v before it): %s", f.Sent.Format("15:04:05.000"), f.Took.Round(time.Millisecond), f.Stalled, f.Err)
	}
	if rep.Failed > 0 {
		logKernelDrops(t)
	}
	return rep
}

// logKernelDrops logs, for each of this test process's namespaces, the
// kernel's TCP and conntrack counters that are not zero and the TCP
// connections conntrack saw no answer for: a request that timed out with
// every path in place lost its SYN somewhere, and these say where
// (conntrack insert_failed or drop, TCP PAWS or listen drops, TIME-WAIT
// handling, a SYN the node forwarded untranslated). An answer after
// about 1.03 s is a SYN sent again after a second; it was 1 % of them
// while the client's timestamps started at a random offset per
// connection (see lab.New).
func logKernelDrops(t testing.TB) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Logf("kernel counters: %v", err)
		return
	}
	mine := fmt.Sprintf("-%d-", os.Getpid())
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if !strings.Contains(name, mine) {
			continue
		}
		tcp, _ := exec.Command("ip", "netns", "exec", name, "nstat", "-as").CombinedOutput()
		conntrack, _ := exec.Command("ip", "netns", "exec", name, "cat", "/proc/net/stat/nf_conntrack").CombinedOutput()
		// A TCP entry still unreplied names a SYN that went nowhere, and
		// whether the node translated it (its reply tuple is then a Pod's).
		unreplied, _ := exec.Command("ip", "netns", "exec", name, "grep", "-E", "tcp .*UNREPLIED", "/proc/net/nf_conntrack").Output()
		t.Logf("kernel counters in %s:\n%s%s%s", name, tcp, conntrack, unreplied)
	}
}

// logStep logs a step of a scenario with the time of day, to set beside
// the failed requests' times and the processes' logs.
func logStep(tb testing.TB, what string) {
	tb.Helper()
	tb.Logf("%s %s", time.Now().Format("15:04:05.000"), what)
}

// watchRoutes records the route changes in ns (ip monitor) until the test
// ends; they are shown if it failed (test/proc), to tell a failed request
// that met a router changing its paths from one whose paths never moved.
func watchRoutes(tb testing.TB, ns *netns.NS) {
	tb.Helper()
	proc.Start(tb, "ip", "-n", ns.Name, "-timestamp", "monitor", "route", "nexthop")
}
