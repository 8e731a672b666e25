// Command bgprouter runs a bgp.Router (internal/speaker/bgp) alone, for
// the network-namespace tests: started inside a node's namespace, it
// takes its sessions and routes from a file given by flag and then from
// commands on stdin, and reports on stdout. It is killed and started
// again to test graceful restart, so its whole state is in its flags.
//
// Protocol: one JSON object per line both ways. In: {"op": "sessions",
// "sessions": [...]}, {"op": "update", "session": name, "advertise":
// [...], "withdraw": [...]}, {"op": "metrics"}, {"op": "bench", "session":
// name, "iterations": n} (n Updates of one route each, for test/bgp's
// benchmark: the i-th advertises 2001:db8:ffff::i/128 and withdraws the
// one before). Out: {"reply": n, "error":
// "...", "metrics": "..."} for the n-th command (from 1), and
// {"established": [...]} whenever the set of established sessions
// changes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// Config is the file given with -config: what to run from the start.
type Config struct {
	Sessions []bgp.Session
	// Routes per session name, advertised right after SetSessions (the
	// first Update of each session, so it connects).
	Routes map[string][]bgp.Route
}

// Command is one line of stdin.
type Command struct {
	Op        string
	Sessions  []bgp.Session
	Session   string
	Advertise []bgp.Route
	Withdraw  []netip.Prefix
	// Iterations of "bench".
	Iterations int
}

// Reply answers the n-th command.
type Reply struct {
	Reply   int    `json:"reply"`
	Error   string `json:"error,omitempty"`
	Metrics string `json:"metrics,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bgprouter:", err)
		os.Exit(1)
	}
}

func run() error {
	configFile := flag.String("config", "", "JSON file with the sessions and routes to start with")
	nodeAddr := flag.String("node-address", "", "the node's address (default router ID)")
	verbosity := flag.Int("v", 0, "log verbosity")
	flag.Parse()

	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) },
		funcr.Options{Verbosity: *verbosity, LogTimestamp: true})
	var opts bgp.Options
	if *nodeAddr != "" {
		a, err := netip.ParseAddr(*nodeAddr)
		if err != nil {
			return fmt.Errorf("-node-address: %w", err)
		}
		opts.NodeAddress = a
	}
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	r, err := bgp.New(log, opts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()

	out := &writer{enc: json.NewEncoder(os.Stdout)}
	go report(ctx, r, out)
	if *configFile != "" {
		if err := apply(ctx, log, r, *configFile); err != nil {
			return err
		}
	}
	go serve(ctx, log, r, reg, out)
	return <-done
}

// apply runs the -config file. A failed Update is logged and the process
// goes on, as the speaker does (it retries later): what the Router makes
// of the failure is what the tests look at.
func apply(ctx context.Context, log logr.Logger, r *bgp.Sessions, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := r.SetSessions(ctx, c.Sessions); err != nil {
		return err
	}
	for _, s := range c.Sessions {
		if err := r.Update(ctx, s.Name, c.Routes[s.Name], nil); err != nil {
			log.Error(err, "first Update failed", "session", s.Name)
		}
	}
	return nil
}

// serve answers stdin's commands until it closes.
func serve(ctx context.Context, log logr.Logger, r *bgp.Sessions, reg *prometheus.Registry, out *writer) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	for n := 1; in.Scan(); n++ {
		var c Command
		rep := Reply{Reply: n}
		err := json.Unmarshal(in.Bytes(), &c)
		if err == nil {
			rep.Metrics, err = do(ctx, r, reg, c)
		}
		if err != nil {
			log.Error(err, "command failed", "n", n, "op", c.Op)
			rep.Error = err.Error()
		}
		out.write(rep)
	}
}

func do(ctx context.Context, r *bgp.Sessions, reg *prometheus.Registry, c Command) (string, error) {
	switch c.Op {
	case "sessions":
		return "", r.SetSessions(ctx, c.Sessions)
	case "update":
		return "", r.Update(ctx, c.Session, c.Advertise, c.Withdraw)
	case "bench":
		return "", bench(ctx, r, c.Session, c.Iterations)
	case "metrics":
		mfs, err := reg.Gather()
		if err != nil {
			return "", err
		}
		var b strings.Builder
		enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return "", err
			}
		}
		return b.String(), nil
	}
	return "", errors.New("unknown op " + c.Op)
}

// report prints the established sessions whenever they change.
func report(ctx context.Context, r *bgp.Sessions, out *writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.Changed():
			up := r.Established()
			if up == nil {
				up = []string{}
			}
			out.write(map[string][]string{"established": up})
		}
	}
}

type writer struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *writer) write(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.enc.Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, "bgprouter: write:", err)
	}
}

// bench makes n Updates of one route each on session.
func bench(ctx context.Context, r *bgp.Sessions, session string, n int) error {
	base := netip.MustParseAddr("2001:db8:ffff::").As16()
	prefix := func(i int) netip.Prefix {
		a := base
		a[12], a[13], a[14], a[15] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		return netip.PrefixFrom(netip.AddrFrom16(a), 128)
	}
	for i := range n {
		var withdraw []netip.Prefix
		if i > 0 {
			withdraw = []netip.Prefix{prefix(i - 1)}
		}
		if err := r.Update(ctx, session, []bgp.Route{{Prefix: prefix(i)}}, withdraw); err != nil {
			return err
		}
	}
	return nil
}
