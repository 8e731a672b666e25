// Package netns gives tests Linux network namespaces to send real frames
// in: created with iproute2 under unique names, deleted when the test ends,
// and entered by a locked OS thread so Go code can open sockets inside.
//
// Everything needs root and the ip command; Require skips the test with a
// clear message elsewhere.
package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Require skips t unless it runs as root with iproute2 installed.
func Require(t testing.TB) {
	t.Helper()
	if reason := Unavailable(); reason != "" {
		t.Skip(reason)
	}
}

// Unavailable says why namespaces cannot be used here (not root, no ip
// command), or returns "" when they can: Require for code that has no test
// at hand, such as a TestMain building a lab for the whole binary.
func Unavailable() string {
	if os.Geteuid() != 0 {
		return "needs root to create network namespaces and open packet sockets"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "needs the ip command (Debian package iproute2)"
	}
	return ""
}

// NS is a network namespace created for one test.
type NS struct {
	Name string
}

var serial atomic.Int64

// New creates a namespace named prefix-<pid>-<n> (prefix short: names are
// limited) and deletes it when t ends. Its loopback is brought up.
func New(t testing.TB, prefix string) *NS {
	t.Helper()
	Require(t)
	n, err := Create(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Delete(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// Create is New without a test: the caller deletes the namespace with
// Delete.
func Create(prefix string) (*NS, error) {
	n := &NS{Name: fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), serial.Add(1))}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("create namespace %s: %v: %s", n.Name, err, out)
	}
	if _, err := n.Exec("link", "set", "lo", "up"); err != nil {
		return nil, errors.Join(err, n.Delete())
	}
	return n, nil
}

// Delete deletes the namespace; its interfaces go with it, and a veth's
// peer in another namespace too.
func (n *NS) Delete() error {
	if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
		return fmt.Errorf("delete namespace %s: %v: %s", n.Name, err, out)
	}
	return nil
}

// Exec runs "ip -n <ns> args..." and returns its output.
func (n *NS) Exec(args ...string) (string, error) {
	args = append([]string{"-n", n.Name}, args...)
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// IP runs "ip -n <ns> args..." and fails t if it fails.
func (n *NS) IP(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, "ip", append([]string{"-n", n.Name}, args...)...)
}

// Sysctl sets a sysctl inside n, e.g. Sysctl(t, "net.ipv6.conf.eth0.accept_dad", "0").
func (n *NS) Sysctl(t testing.TB, key, value string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	if err := n.Run(func() error { return os.WriteFile(path, []byte(value), 0) }); err != nil {
		t.Fatalf("sysctl %s=%s in %s: %v", key, value, n.Name, err)
	}
}

// Run calls f on an OS thread that has entered n, and returns f's error.
// Sockets f opens live in n for good; goroutines f starts do not run in n
// (they get other threads), so f must open what it needs itself. The
// thread is never handed back to the runtime: it exits with f.
func (n *NS) Run(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine rather
		// than serving others from inside n.
		fd, err := unix.Open("/run/netns/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open namespace %s: %w", n.Name, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("enter namespace %s: %w", n.Name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Veth joins a and b with a veth pair, named aName in a and bName in b,
// both up.
func Veth(t testing.TB, a *NS, aName string, b *NS, bName string) {
	t.Helper()
	a.IP(t, "link", "add", aName, "type", "veth", "peer", "name", bName, "netns", b.Name)
	a.IP(t, "link", "set", aName, "up")
	b.IP(t, "link", "set", bName, "up")
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// WaitLinkLocal waits until ifname in n has an IPv6 link-local address
// (the kernel adds it shortly after the link comes up).
func (n *NS) WaitLinkLocal(t testing.TB, ifname string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(n.IP(t, "-6", "addr", "show", "dev", ifname, "scope", "link"), "fe80::") {
		if time.Now().After(deadline) {
			t.Fatalf("%s in %s has no link-local address", ifname, n.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HardwareAddr is the MAC of ifname in n.
func (n *NS) HardwareAddr(t testing.TB, ifname string) net.HardwareAddr {
	t.Helper()
	var mac net.HardwareAddr
	if err := n.Run(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	}); err != nil {
		t.Fatalf("%s in %s: %v", ifname, n.Name, err)
	}
	return mac
}
