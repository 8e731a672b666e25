// Package frr runs FRR daemons (Debian's package frr) as a real router for
// network-namespace tests: each daemon is a child process in a namespace,
// with its configuration, pid file, log and sockets in a temporary
// directory, so nothing under /etc/frr or /var/run/frr is touched; vtysh
// talks to it through that directory.
//
// Everything needs root, iproute2 and the frr package; Require skips the
// test with a clear message elsewhere.
package frr

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/netns"
)

// Dir is where Debian installs the daemons.
const Dir = "/usr/lib/frr"

// Require skips t unless root, iproute2, vtysh, the frr user and the
// named daemons (e.g. "bfdd") are there.
func Require(t testing.TB, daemons ...string) {
	t.Helper()
	netns.Require(t)
	for _, d := range daemons {
		if _, err := os.Stat(filepath.Join(Dir, d)); err != nil {
			t.Skipf("needs FRR's %s (Debian package frr): %v", d, err)
		}
	}
	if _, err := exec.LookPath("vtysh"); err != nil {
		t.Skip("needs FRR's vtysh (Debian package frr)")
	}
	if _, err := user.Lookup("frr"); err != nil {
		t.Skip("needs the frr user the Debian package frr creates")
	}
}

// Router is a set of FRR daemons running in one namespace.
type Router struct {
	dir string
}

// Start runs each daemon of configs (daemon name -> its configuration
// file's text) in ns, zebra first when present, waits until vtysh reaches
// them all, and stops them with SIGTERM (then SIGKILL) when t ends. The
// daemons drop privileges to the frr user, as packaged.
func Start(t testing.TB, ns *netns.NS, configs map[string]string) *Router {
	t.Helper()
	Require(t)
	dir, err := os.MkdirTemp("", "steadylb-frr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The daemons run as frr and create their sockets here.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	r := &Router{dir: dir}
	// zebra first: the others connect to it.
	order := slices.Sorted(maps.Keys(configs))
	if i := slices.Index(order, "zebra"); i > 0 {
		order = append([]string{"zebra"}, slices.Delete(order, i, i+1)...)
	}
	for _, d := range order {
		r.startDaemon(t, ns, d, configs[d])
	}
	return r
}

func (r *Router) startDaemon(t testing.TB, ns *netns.NS, daemon, config string) {
	t.Helper()
	Require(t, daemon)
	conf := filepath.Join(r.dir, daemon+".conf")
	// Logging set in the file rather than by --log, so the millisecond
	// timestamps apply to it.
	config = fmt.Sprintf("log file %s\nlog timestamp precision 3\n", r.log(daemon)) + config
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"netns", "exec", ns.Name, filepath.Join(Dir, daemon),
		"-f", conf,
		"-i", filepath.Join(r.dir, daemon+".pid"),
		"--vty_socket", r.dir,
		"-z", filepath.Join(r.dir, "zserv.api"),
		"-u", "frr", "-g", "frr",
	}
	if daemon == "bfdd" {
		args = append(args, "--bfdctl", filepath.Join(r.dir, "bfdd.sock"))
	}
	cmd := exec.Command("ip", args...)
	out, err := os.Create(filepath.Join(r.dir, daemon+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", daemon, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			r.dumpLog(t, daemon)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := r.vtysh(daemon, "show version"); err == nil {
			return
		}
		select {
		case <-exited:
			r.dumpLog(t, daemon)
			t.Fatalf("%s exited at start", daemon)
		default:
		}
		if time.Now().After(deadline) {
			r.dumpLog(t, daemon)
			t.Fatalf("%s did not answer vtysh within 10s", daemon)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *Router) log(daemon string) string { return filepath.Join(r.dir, daemon+".log") }

func (r *Router) dumpLog(t testing.TB, daemon string) {
	for _, f := range []string{r.log(daemon), filepath.Join(r.dir, daemon+".out")} {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			t.Logf("%s:\n%s", filepath.Base(f), b)
		}
	}
}

// VTY runs vtysh commands against daemon (one -c each, so "configure
// terminal" followed by configuration lines works) and returns the
// output; it fails t if vtysh fails.
func (r *Router) VTY(t testing.TB, daemon string, cmds ...string) string {
	t.Helper()
	out, err := r.vtysh(daemon, cmds...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *Router) vtysh(daemon string, cmds ...string) (string, error) {
	args := []string{"--vty_socket", r.dir, "-d", daemon}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out, err := exec.Command("vtysh", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("vtysh %s: %w: %s", strings.Join(cmds, "; "), err, out)
	}
	return string(out), nil
}

// BFDPeer is one entry of "show bfd peers json".
type BFDPeer struct {
	Peer             string `json:"peer"`
	Local            string `json:"local"`
	Interface        string `json:"interface"`
	Multihop         bool   `json:"multihop"`
	MinimumTTL       int    `json:"minimum-ttl"`
	VRF              string `json:"vrf"`
	ID               uint32 `json:"id"`
	RemoteID         uint32 `json:"remote-id"`
	PassiveMode      bool   `json:"passive-mode"`
	Status           string `json:"status"`
	Diagnostic       string `json:"diagnostic"`
	RemoteDiagnostic string `json:"remote-diagnostic"`
	ReceiveInterval  int    `json:"receive-interval"`
	TransmitInterval int    `json:"transmit-interval"`
	DetectMultiplier int    `json:"detect-multiplier"`
	// The peer's advertised values, in milliseconds.
	RemoteReceiveInterval  int `json:"remote-receive-interval"`
	RemoteTransmitInterval int `json:"remote-transmit-interval"`
	RemoteDetectMultiplier int `json:"remote-detect-multiplier"`
}

// BFDPeers returns bfdd's view of its peers, keyed by peer address.
func (r *Router) BFDPeers(t testing.TB) map[string]BFDPeer {
	t.Helper()
	peers, err := r.bfdPeers()
	if err != nil {
		t.Fatal(err)
	}
	return peers
}

func (r *Router) bfdPeers() (map[string]BFDPeer, error) {
	out, err := r.vtysh("bfdd", "show bfd peers json")
	if err != nil {
		return nil, err
	}
	var list []BFDPeer
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, errors.Join(fmt.Errorf("parse show bfd peers json: %q", out), err)
	}
	peers := make(map[string]BFDPeer, len(list))
	for _, p := range list {
		peers[p.Peer] = p
	}
	return peers, nil
}

// BFDStateChange is one session state change bfdd logged; the
// configuration must turn on "debug bfd peer".
type BFDStateChange struct {
	At       time.Time
	Peer     string
	From, To string
	// Reason is bfdd's word for a change to down, e.g. "control-expired".
	Reason string
}

// stateChange matches bfdd's log line, e.g.
// 2026/12/04 03:22:33.123 BFD: [SEY1D-NT8EQ] state-change: [mhop:no peer:198.51.100.2 local:198.51.100.1 vrf:default] up -> down reason:control-expired
var stateChange = regexp.MustCompile(`^(\S+ \S+) BFD: \[[^]]*\] state-change: \[[^]]*peer:(\S+) [^]]*\] (\S+) -> (\S+)(?: reason:(\S+))?`)

// BFDStateChanges returns the state changes in bfdd's log so far, oldest
// first, with the millisecond times bfdd logged them at.
func (r *Router) BFDStateChanges(tb testing.TB) []BFDStateChange {
	tb.Helper()
	b, err := os.ReadFile(r.log("bfdd"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []BFDStateChange
	for _, line := range strings.Split(string(b), "\n") {
		m := stateChange.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000", m[1], time.Local)
		if err != nil {
			tb.Fatalf("bfdd log time %q: %v", m[1], err)
		}
		out = append(out, BFDStateChange{At: at, Peer: m[2], From: m[3], To: m[4], Reason: m[5]})
	}
	return out
}
