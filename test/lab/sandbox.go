package lab

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/testenv"
)

// Sandbox is a network namespace with nothing but a loopback, from which
// the API server is reachable at the address in the suite's kubeconfig.
// A speaker run there has no interface to answer ARP or NDP on, so suites
// that only care about what it writes to the API server can run the real
// binary without it sending a frame on the machine's own network.
type Sandbox struct {
	NS *netns.NS
}

// NewSandbox creates a sandbox that lasts until tb ends, and skips tb
// where namespaces are unavailable.
func NewSandbox(tb testing.TB, env *testenv.Env) *Sandbox {
	tb.Helper()
	ns := netns.New(tb, "slb-box")
	api, err := url.Parse(env.Config.Host)
	if err != nil {
		tb.Fatalf("lab: API server address %q: %v", env.Config.Host, err)
	}
	fwd, err := forward(ns, api.Host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fwd.Close() })
	return &Sandbox{NS: ns}
}

// Command returns the command line ("ip", args) that runs binary with
// args inside the sandbox, for proc.Start.
func (s *Sandbox) Command(binary string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", s.NS.Name, binary}, args...)
}

// Get fetches url from inside the sandbox (its loopback is its own) and
// returns the body of a 200 answer.
func (s *Sandbox) Get(ctx context.Context, url string) ([]byte, error) {
	body, err := get(ctx, s.NS, url)
	if err != nil {
		return body, fmt.Errorf("lab: from the sandbox: %w", err)
	}
	return body, nil
}
