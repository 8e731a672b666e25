package bgp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
)

// routerBinary is test/bgprouter, built once by TestMain.
var routerBinary string

func TestMain(m *testing.M) {
	if reason := netns.Unavailable(); reason != "" {
		// Every test skips; nothing to build.
		os.Exit(m.Run())
	}
	os.Exit(proc.WithBuilt("github.com/steadylb/steadylb/test/bgprouter", &routerBinary, m.Run))
}

// The lab's addresses: the router is .1 and 2001:db8::1 on eth0; the node
// has .2 to .5 and 2001:db8::2, each IPv4 address used by one session.
var (
	routerV4, routerV6 = netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")
	nodeV4, nodeV6     = netip.MustParseAddr("198.51.100.2"), netip.MustParseAddr("2001:db8::2")
	nodeExtra          = []netip.Addr{netip.MustParseAddr("198.51.100.3"), netip.MustParseAddr("198.51.100.4"), netip.MustParseAddr("198.51.100.5")}
)

// lab is FRR in a router namespace and a node namespace, each with an
// eth0 plugged into a bridge in a switch namespace: cut stops the node's
// port forwarding, as a failed link beyond the switch would, and neither
// side sees its carrier go.
type lab struct {
	router, node, sw *netns.NS
	frr              *frr.Router
}

// newLab starts zebra, bgpd (with bgpdConfig) and bfdd in the router
// namespace.
func newLab(tb testing.TB, bgpdConfig string) *lab { return newLabZebra(tb, bgpdConfig, "") }

// newLabZebra is newLab with a configuration for zebra too.
func newLabZebra(tb testing.TB, bgpdConfig, zebraConfig string) *lab {
	tb.Helper()
	frr.Require(tb, "bgpd", "bfdd", "zebra")
	l := &lab{router: netns.New(tb, "bgp-rtr"), node: netns.New(tb, "bgp-node"), sw: netns.New(tb, "bgp-sw")}
	l.sw.IP(tb, "link", "add", "br0", "type", "bridge")
	netns.Veth(tb, l.sw, "to-rtr", l.router, "eth0")
	netns.Veth(tb, l.sw, "to-node", l.node, "eth0")
	for _, port := range []string{"to-rtr", "to-node"} {
		l.sw.IP(tb, "link", "set", port, "master", "br0")
	}
	l.sw.IP(tb, "link", "set", "br0", "up")
	for _, ns := range []*netns.NS{l.router, l.node} {
		ns.Sysctl(tb, "net.ipv6.conf.eth0.keep_addr_on_down", "1")
	}
	l.router.IP(tb, "addr", "add", routerV4.String()+"/24", "dev", "eth0")
	l.router.IP(tb, "addr", "add", routerV6.String()+"/64", "dev", "eth0", "nodad")
	for _, a := range append([]netip.Addr{nodeV4}, nodeExtra...) {
		l.node.IP(tb, "addr", "add", a.String()+"/24", "dev", "eth0")
	}
	l.node.IP(tb, "addr", "add", nodeV6.String()+"/64", "dev", "eth0", "nodad")
	l.frr = frr.Start(tb, l.router, map[string]string{
		"zebra": zebraConfig,
		"bfdd":  "debug bfd peer\n",
		"bgpd":  bgpdConfig,
	})
	return l
}

// cut stops the node's switch port from forwarding (both ways); restore
// undoes it.
func (l *lab) cut(tb testing.TB) { l.portState(tb, "0") }

func (l *lab) restore(tb testing.TB) { l.portState(tb, "3") }

func (l *lab) portState(tb testing.TB, state string) {
	tb.Helper()
	out, err := exec.Command("ip", "netns", "exec", l.sw.Name, "bridge", "link", "set", "dev", "to-node", "state", state).CombinedOutput()
	if err != nil {
		tb.Fatalf("bridge link set to-node state %s: %v: %s", state, err, out)
	}
}

// routerConfig is test/bgprouter's -config file.
type routerConfig struct {
	Sessions []bgp.Session
	Routes   map[string][]bgp.Route
}

// speaker is one test/bgprouter process in the node namespace.
type speaker struct {
	tb    testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu          sync.Mutex
	stderr      bytes.Buffer
	replies     []reply
	established []string
	sent        int
}

type reply struct {
	Reply   int    `json:"reply"`
	Error   string `json:"error"`
	Metrics string `json:"metrics"`
}

// startSpeaker runs test/bgprouter in the node namespace with cfg; it is
// killed when the test ends.
func (l *lab) startSpeaker(tb testing.TB, cfg routerConfig) *speaker {
	tb.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "config.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	s := &speaker{tb: tb, done: make(chan struct{})}
	s.cmd = exec.Command("ip", "netns", "exec", l.node.Name, routerBinary, "-config", file, "-node-address", nodeV4.String())
	s.cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go s.read(stdout)
	tb.Cleanup(func() {
		s.kill()
		if tb.Failed() {
			tb.Logf("bgprouter output:\n%s", s.output())
		}
	})
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

func (s *speaker) read(r io.Reader) {
	defer close(s.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			reply
			Established *[]string `json:"established"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue
		}
		s.mu.Lock()
		if line.Established != nil {
			s.established = *line.Established
		} else {
			s.replies = append(s.replies, line.reply)
		}
		s.mu.Unlock()
	}
	s.cmd.Wait()
}

func (s *speaker) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// kill ends the process with SIGKILL, as a crash would.
func (s *speaker) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.done
}

// do sends one command and waits for its reply.
func (s *speaker) do(tb testing.TB, cmd map[string]any) reply {
	tb.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	s.mu.Lock()
	s.sent++
	n := s.sent
	s.mu.Unlock()
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		tb.Fatalf("send %s: %v", b, err)
	}
	var rep reply
	waitFor(tb, fmt.Sprintf("reply to %s", b), 30*time.Second, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.replies {
			if r.Reply == n {
				rep = r
				return nil
			}
		}
		return fmt.Errorf("no reply")
	})
	return rep
}

// must is do that fails tb when the command fails.
func (s *speaker) must(tb testing.TB, cmd map[string]any) reply {
	tb.Helper()
	rep := s.do(tb, cmd)
	if rep.Error != "" {
		tb.Fatalf("%v: %s", cmd["op"], rep.Error)
	}
	return rep
}

func (s *speaker) update(tb testing.TB, session string, advertise []bgp.Route, withdraw ...netip.Prefix) {
	tb.Helper()
	s.must(tb, map[string]any{"op": "update", "session": session, "advertise": advertise, "withdraw": withdraw})
}

func (s *speaker) setSessions(tb testing.TB, sessions ...bgp.Session) {
	tb.Helper()
	s.must(tb, map[string]any{"op": "sessions", "sessions": sessions})
}

// metric returns the value of the sample whose line starts with name
// (with its labels), or -1.
func (s *speaker) metric(tb testing.TB, name string) float64 {
	tb.Helper()
	text := s.must(tb, map[string]any{"op": "metrics"}).Metrics
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

func (s *speaker) isEstablished(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.established, name)
}

// waitFor polls cond until it holds, failing tb after limit.
func waitFor(tb testing.TB, what string, limit time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v: %v", what, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// peerState is bgpd's state of one neighbor in the family's summary.
func (l *lab) peer(tb testing.TB, family, addr string) frr.BGPPeer {
	tb.Helper()
	return l.frr.BGPSummary(tb)[family][addr]
}

// waitPeer waits until bgpd's neighbor is in state ("Established", ...).
func (l *lab) waitPeer(tb testing.TB, family, addr, state string, limit time.Duration) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("bgpd's neighbor %s %s", addr, state), limit, func() error {
		if p := l.peer(tb, family, addr); p.State != state {
			return fmt.Errorf("state %q", p.State)
		}
		return nil
	})
}

// waitRoute waits until bgpd has (present) or lacks the prefix.
func (l *lab) waitRoute(tb testing.TB, prefix string, present bool, limit time.Duration) []frr.BGPPath {
	tb.Helper()
	var paths []frr.BGPPath
	waitFor(tb, fmt.Sprintf("%s at bgpd: %v", prefix, present), limit, func() error {
		paths = l.frr.BGPRoute(tb, prefix)
		if (len(paths) > 0) != present {
			return fmt.Errorf("%d paths", len(paths))
		}
		return nil
	})
	return paths
}
