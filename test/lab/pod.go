package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
)

// Pods are wired by the reference CNI plugins (Debian package
// containernetworking-plugins), run exactly as a container runtime runs
// them, so a node sees what a kubelet's pod start makes: a bridge cni0
// holding the gateway addresses and one veth<hex> port per pod going from
// down to up.
const (
	// CNIPath is where Debian installs the plugins.
	CNIPath = "/usr/lib/cni"
	// PodBridge is the bridge the plugin creates on the node.
	PodBridge = "cni0"
	// PodInterface is the pod's interface.
	PodInterface = "eth0"
)

// The pod networks: node i (from 1) has 10.244.i.0/24 and
// 2001:db8:244:i::/64, the gateway .1 / ::1 on its cni0. They exist only
// inside the lab's namespaces; nothing routes between nodes' pod
// networks.
var (
	PodSubnets4 = netip.MustParsePrefix("10.244.0.0/16")
	PodSubnets6 = netip.MustParsePrefix("2001:db8:244::/48")
)

// PodsUnavailable says why pods cannot be started here (the CNI plugins
// are not installed), or returns "". Suites skip with it.
func PodsUnavailable() string {
	if reason := Unavailable(); reason != "" {
		return reason
	}
	for _, plugin := range []string{"bridge", "host-local"} {
		if _, err := os.Stat(filepath.Join(CNIPath, plugin)); err != nil {
			return "needs the CNI plugins in " + CNIPath + " (Debian package containernetworking-plugins)"
		}
	}
	return ""
}

// RequirePods skips tb where pods cannot be started.
func RequirePods(tb testing.TB) {
	tb.Helper()
	if reason := PodsUnavailable(); reason != "" {
		tb.Skip(reason)
	}
}

// PodCIDR4 and PodCIDR6 are the node's pod networks.
func (n *Node) PodCIDR4() netip.Prefix {
	a := PodSubnets4.Addr().As4()
	a[2] = byte(n.index)
	return netip.PrefixFrom(netip.AddrFrom4(a), 24)
}

func (n *Node) PodCIDR6() netip.Prefix {
	a := PodSubnets6.Addr().As16()
	a[7] = byte(n.index)
	return netip.PrefixFrom(netip.AddrFrom16(a), 64)
}

// Pod is a pod on a node: a network namespace whose eth0 is one end of a
// veth pair, the other end (HostVeth) a port of the node's cni0, with
// addresses from the node's pod networks and default routes through the
// bridge.
type Pod struct {
	// Name is unique in the lab (pod-<n> unless given).
	Name string
	Node *Node
	// NS is the pod's namespace; processes started in it (Start,
	// Command) are the pod's containers.
	NS *netns.NS
	// IPv4 and IPv6 are the pod's addresses on its eth0.
	IPv4, IPv6 netip.Addr
	// HostVeth is the name of the veth's end on the node.
	HostVeth string

	netconf []byte
	closed  sync.Once
	err     error
}

var podSerial atomic.Int64

// StartPod creates a pod on the node: its namespace, then CNI ADD by the
// bridge plugin run in the node's namespace. name "" picks pod-<n>. The
// caller closes it; the lab closes those left when it closes.
func (n *Node) StartPod(name string) (_ *Pod, err error) {
	if reason := PodsUnavailable(); reason != "" {
		return nil, fmt.Errorf("lab: start a pod: %s", reason)
	}
	if name == "" {
		name = fmt.Sprintf("pod-%d", podSerial.Add(1))
	}
	ipam, err := n.ipamDir()
	if err != nil {
		return nil, err
	}
	ns, err := netns.Create("slb-pod")
	if err != nil {
		return nil, fmt.Errorf("lab: pod %s: %w", name, err)
	}
	p := &Pod{Name: name, Node: n, NS: ns}
	defer func() {
		if err != nil {
			err = errors.Join(err, ns.Delete())
		}
	}()
	// Addresses are usable at once, as a kubelet's would be by the time
	// its containers start.
	if err := sysctls(ns, map[string]string{"net.ipv6.conf.default.accept_dad": "0", "net.ipv6.conf.all.accept_dad": "0"}); err != nil {
		return nil, err
	}
	if p.netconf, err = n.netconf(ipam); err != nil {
		return nil, err
	}
	out, err := p.cni("ADD")
	if err != nil {
		return nil, err
	}
	if err := p.readResult(out); err != nil {
		return nil, errors.Join(err, p.del())
	}
	n.track(p)
	return p, nil
}

// Pod is StartPod for a test: tb fails if it cannot start, and the pod is
// closed when tb ends. RequirePods skips tests where pods are unavailable.
func (n *Node) Pod(tb testing.TB, name string) *Pod {
	tb.Helper()
	RequirePods(tb)
	p, err := n.StartPod(name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Error(err)
		}
	})
	return p
}

// Close stops the pod as a kubelet would: CNI DEL (the host veth goes,
// the addresses return to the pool), then the namespace is deleted.
// Processes still running in it are the caller's. Close is idempotent.
func (p *Pod) Close() error {
	p.closed.Do(func() {
		p.err = errors.Join(p.del(), p.NS.Delete())
		p.Node.untrack(p)
	})
	return p.err
}

// Command returns the command line ("ip", args) that runs binary with
// args inside the pod, for proc.Start or exec.Command.
func (p *Pod) Command(binary string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", p.NS.Name, binary}, args...)
}

// Start runs binary with args inside the pod until tb ends (proc.Start).
func (p *Pod) Start(tb testing.TB, binary string, args ...string) *proc.Process {
	tb.Helper()
	name, argv := p.Command(binary, args...)
	return proc.Start(tb, name, argv...)
}

func (p *Pod) del() error {
	_, err := p.cni("DEL")
	return err
}

// cni runs the bridge plugin in the node's namespace, which is the
// "host" side for the plugin, with the pod's namespace as the sandbox.
func (p *Pod) cni(command string) ([]byte, error) {
	cmd := exec.Command("ip", "netns", "exec", p.Node.NS.Name, filepath.Join(CNIPath, "bridge"))
	cmd.Env = append(os.Environ(),
		"CNI_COMMAND="+command,
		"CNI_CONTAINERID="+p.NS.Name,
		"CNI_NETNS=/run/netns/"+p.NS.Name,
		"CNI_IFNAME="+PodInterface,
		"CNI_PATH="+CNIPath,
	)
	cmd.Stdin = bytes.NewReader(p.netconf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// Plugins report errors as JSON on stdout.
		return nil, fmt.Errorf("lab: CNI %s of pod %s on %s: %v: %s%s", command, p.Name, p.Node.Name, err,
			strings.TrimSpace(string(out)), strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// cniResult is the part of a CNI result the lab reads.
type cniResult struct {
	Interfaces []struct {
		Name    string `json:"name"`
		Sandbox string `json:"sandbox"`
	} `json:"interfaces"`
	IPs []struct {
		Address string `json:"address"`
	} `json:"ips"`
}

func (p *Pod) readResult(out []byte) error {
	var res cniResult
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("lab: CNI result of pod %s: %w", p.Name, err)
	}
	for _, ifc := range res.Interfaces {
		if ifc.Sandbox == "" && ifc.Name != PodBridge {
			p.HostVeth = ifc.Name
		}
	}
	for _, ip := range res.IPs {
		pfx, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			return fmt.Errorf("lab: CNI result of pod %s: %w", p.Name, err)
		}
		if pfx.Addr().Is4() {
			p.IPv4 = pfx.Addr()
		} else {
			p.IPv6 = pfx.Addr()
		}
	}
	if p.HostVeth == "" || !p.IPv4.IsValid() || !p.IPv6.IsValid() {
		return fmt.Errorf("lab: CNI result of pod %s lacks the host veth or an address: %s", p.Name, out)
	}
	return nil
}

// netconf is the node's network configuration: the bridge plugin as a
// kubeadm cluster's 10-bridge.conf would have it (isGateway,
// isDefaultGateway, hairpin for a pod reaching itself through a Service),
// host-local IPAM on the node's pod networks with its state in ipam.
func (n *Node) netconf(ipam string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0", "name": "lab", "type": "bridge",
		"bridge": PodBridge, "isGateway": true, "isDefaultGateway": true, "hairpinMode": true,
		"ipam": map[string]any{
			"type": "host-local", "dataDir": ipam,
			"ranges": [][]map[string]string{{{"subnet": n.PodCIDR4().String()}}, {{"subnet": n.PodCIDR6().String()}}},
		},
	}
	data, err := json.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("lab: network configuration of %s: %w", n.Name, err)
	}
	return data, nil
}

// pods is a node's pod bookkeeping: the IPAM state directory and the pods
// not closed yet.
type pods struct {
	mu   sync.Mutex
	ipam string
	open map[*Pod]struct{}
}

// ipamDir creates the node's host-local state directory on first use.
func (n *Node) ipamDir() (string, error) {
	n.pods.mu.Lock()
	defer n.pods.mu.Unlock()
	if n.pods.ipam != "" {
		return n.pods.ipam, nil
	}
	dir, err := os.MkdirTemp("", "steadylb-ipam-"+n.Name+"-")
	if err != nil {
		return "", fmt.Errorf("lab: pod IPAM directory of %s: %w", n.Name, err)
	}
	n.pods.ipam = dir
	return dir, nil
}

func (n *Node) track(p *Pod) {
	n.pods.mu.Lock()
	defer n.pods.mu.Unlock()
	if n.pods.open == nil {
		n.pods.open = map[*Pod]struct{}{}
	}
	n.pods.open[p] = struct{}{}
}

func (n *Node) untrack(p *Pod) {
	n.pods.mu.Lock()
	defer n.pods.mu.Unlock()
	delete(n.pods.open, p)
}

// closePods closes the pods left open and removes the IPAM state; the
// lab runs it before it deletes the node's namespace.
func (n *Node) closePods() error {
	n.pods.mu.Lock()
	left := make([]*Pod, 0, len(n.pods.open))
	for p := range n.pods.open {
		left = append(left, p)
	}
	dir := n.pods.ipam
	n.pods.mu.Unlock()
	var errs []error
	for _, p := range left {
		errs = append(errs, p.Close())
	}
	if dir != "" {
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}
