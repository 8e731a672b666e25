package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/testenv"
)

// The lab's addresses on segment a. Node i (from 1) has .i / ::i.
var (
	Subnet4    = netip.MustParsePrefix("198.51.100.0/24")
	Subnet6    = netip.MustParsePrefix("2001:db8:100::/64")
	ClientIPv4 = netip.MustParseAddr("198.51.100.200")
	ClientIPv6 = netip.MustParseAddr("2001:db8:100::200")
)

// The interfaces, the same names in every namespace: SegmentA carries the
// addresses, SegmentB only link-local IPv6 (for interface restrictions).
const (
	SegmentA = "eth0"
	SegmentB = "eth1"
)

// DefaultNodes is how many nodes a lab has unless Options says otherwise.
const DefaultNodes = 3

// ErrUnavailable is returned by New where namespaces cannot be made.
var ErrUnavailable = errors.New("network namespace lab unavailable")

// Unavailable says why a lab cannot be built here (not root, no ip
// command), or returns "". Suites skip with it.
func Unavailable() string { return netns.Unavailable() }

// Options configure a lab.
type Options struct {
	// Env is the control plane the speakers talk to and the lab writes
	// its Node and Pod objects to. Required.
	Env *testenv.Env
	// Nodes is the number of nodes, at most 199; default DefaultNodes.
	Nodes int
	// Namespace holds the speaker Pods; default testenv.Namespace.
	Namespace string
	// Speaker is the path of the built cmd/speaker binary, for Node.Start.
	Speaker string
	// MetalLB says Speaker is MetalLB's speaker, v0.15 (hack/tools.sh
	// metallb-speaker), for benchmarks that compare the two: Node.Start
	// passes it MetalLB's flags, and Speaker.MetalLB tells the suites.
	MetalLB bool
}

// Lab is a running lab: the namespaces, the forwarders and the Kubernetes
// objects standing for the nodes. Close removes everything.
type Lab struct {
	// LAN is the namespace of the two bridges.
	LAN    *netns.NS
	Client *Client
	Nodes  []*Node

	opts    Options
	apiAddr string // host:port of the API server on the host's loopback
	// undo are run by Close, last first.
	undo []func() error
}

// New builds a lab. On error, what was built is removed again.
func New(opts Options) (_ *Lab, err error) {
	if reason := Unavailable(); reason != "" {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, reason)
	}
	if opts.Env == nil {
		return nil, errors.New("lab: Options.Env is required")
	}
	if opts.Nodes == 0 {
		opts.Nodes = DefaultNodes
	}
	if opts.Nodes < 1 || opts.Nodes > 199 {
		return nil, fmt.Errorf("lab: %d nodes: want 1 to 199", opts.Nodes)
	}
	if opts.Namespace == "" {
		opts.Namespace = testenv.Namespace
	}
	api, err := url.Parse(opts.Env.Config.Host)
	if err != nil || api.Port() == "" {
		return nil, fmt.Errorf("lab: API server address %q has no port", opts.Env.Config.Host)
	}
	l := &Lab{opts: opts, apiAddr: api.Host}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close())
		}
	}()
	if err := l.buildLAN(); err != nil {
		return nil, err
	}
	if err := l.buildClient(); err != nil {
		return nil, err
	}
	for i := 1; i <= opts.Nodes; i++ {
		n, err := l.buildNode(i)
		if err != nil {
			return nil, err
		}
		l.Nodes = append(l.Nodes, n)
	}
	if err := l.createObjects(context.Background()); err != nil {
		return nil, err
	}
	return l, nil
}

// Close stops the forwarders, deletes the namespaces and the lab's
// Kubernetes objects. Speakers still running are the caller's (they are
// tied to their tests).
func (l *Lab) Close() error {
	var errs []error
	for i := len(l.undo) - 1; i >= 0; i-- {
		errs = append(errs, l.undo[i]())
	}
	l.undo = nil
	return errors.Join(errs...)
}

// Node returns the node called name, or nil.
func (l *Lab) Node(name string) *Node {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// NodeByMAC returns the node with an interface of this MAC, or nil.
func (l *Lab) NodeByMAC(mac net.HardwareAddr) *Node {
	for _, n := range l.Nodes {
		for _, m := range n.macs {
			if m.String() == mac.String() {
				return n
			}
		}
	}
	return nil
}

// Namespace is where the speaker Pods live.
func (l *Lab) Namespace() string { return l.opts.Namespace }

// MetalLB says the speakers are MetalLB's (Options.MetalLB).
func (l *Lab) MetalLB() bool { return l.opts.MetalLB }

func (l *Lab) newNS(prefix string) (*netns.NS, error) {
	ns, err := netns.Create(prefix)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l.undo = append(l.undo, ns.Delete)
	return ns, nil
}

// buildLAN creates the bridges. Multicast snooping is off so every
// solicitation reaches every node, and a node that answers when it must
// not is seen; the bridges have no addresses and no IPv6, so they send
// nothing of their own.
func (l *Lab) buildLAN() error {
	ns, err := l.newNS("slb-lan")
	if err != nil {
		return err
	}
	l.LAN = ns
	if err := sysctls(ns, map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}); err != nil {
		return err
	}
	for _, br := range []string{"br0", "br1"} {
		if err := ipAll(ns,
			[]string{"link", "add", br, "type", "bridge", "mcast_snooping", "0", "forward_delay", "0", "stp_state", "0"},
			[]string{"link", "set", br, "up"}); err != nil {
			return err
		}
	}
	return nil
}

// host is a namespace on both segments: the client or a node.
type host struct {
	ns   *netns.NS
	macs map[string]net.HardwareAddr
	// ports are the bridge-side names of its veths, by its interface.
	ports map[string]string
}

// attach creates the host's namespace and plugs it into both segments,
// with v4/v6 (if valid) on segment a. tag names the bridge ports.
func (l *Lab) attach(prefix, tag string, v4, v6 netip.Addr) (*host, error) {
	ns, err := l.newNS(prefix)
	if err != nil {
		return nil, err
	}
	// No duplicate address detection: addresses are usable at once and
	// nothing is sent for them but what the test sends.
	if err := sysctls(ns, map[string]string{
		"net.ipv6.conf.all.accept_dad": "0", "net.ipv6.conf.default.accept_dad": "0",
		"net.ipv6.conf.default.router_solicitations": "0",
	}); err != nil {
		return nil, err
	}
	h := &host{ns: ns, macs: map[string]net.HardwareAddr{}, ports: map[string]string{}}
	for ifname, seg := range map[string]struct{ bridge, port string }{
		SegmentA: {"br0", tag + "a"}, SegmentB: {"br1", tag + "b"},
	} {
		if err := ipAll(ns, []string{"link", "add", ifname, "type", "veth", "peer", "name", seg.port, "netns", l.LAN.Name},
			[]string{"link", "set", ifname, "up"}); err != nil {
			return nil, err
		}
		if err := ipAll(l.LAN, []string{"link", "set", seg.port, "master", seg.bridge}, []string{"link", "set", seg.port, "up"}); err != nil {
			return nil, err
		}
		h.ports[ifname] = seg.port
	}
	if err := ipAll(ns,
		[]string{"addr", "add", netip.PrefixFrom(v4, Subnet4.Bits()).String(), "dev", SegmentA},
		[]string{"addr", "add", netip.PrefixFrom(v6, Subnet6.Bits()).String(), "dev", SegmentA, "nodad"}); err != nil {
		return nil, err
	}
	for _, ifname := range []string{SegmentA, SegmentB} {
		mac, err := hardwareAddr(ns, ifname)
		if err != nil {
			return nil, err
		}
		h.macs[ifname] = mac
	}
	return h, nil
}

func (l *Lab) buildClient() error {
	h, err := l.attach("slb-cli", "c", ClientIPv4, ClientIPv6)
	if err != nil {
		return err
	}
	// TCP timestamps without a random offset per connection: with one,
	// a SYN that kube-proxy masquerades onto a port a Pod still holds in
	// TIME-WAIT can carry an older timestamp and be refused (PAWS), and
	// the client resends it a second later, to another Pod that may do
	// the same: about 1 % of the lab's requests took 1 s, and now and then
	// one timed out, none of it steadylb's doing.
	if err := sysctls(h.ns, map[string]string{"net.ipv4.tcp_timestamps": "2"}); err != nil {
		return err
	}
	l.Client = &Client{NS: h.ns, macs: h.macs}
	return nil
}

func (l *Lab) buildNode(i int) (*Node, error) {
	v4 := Subnet4.Addr().As4()
	v4[3] = byte(i)
	v6 := Subnet6.Addr().As16()
	v6[15] = byte(i)
	n := &Node{Name: fmt.Sprintf("node-%d", i), IPv4: netip.AddrFrom4(v4), IPv6: netip.AddrFrom16(v6), lab: l, index: i}
	h, err := l.attach(fmt.Sprintf("slb-n%d", i), fmt.Sprintf("n%d", i), n.IPv4, n.IPv6)
	if err != nil {
		return nil, err
	}
	n.NS, n.macs, n.ports = h.ns, h.macs, h.ports
	// Pods go before their node's namespace (undo runs last first).
	l.undo = append(l.undo, n.closePods)
	if n.fwd, err = forward(h.ns, l.apiAddr); err != nil {
		return nil, err
	}
	l.undo = append(l.undo, n.fwd.Close)
	return n, nil
}

// sysctls sets sysctls inside ns, from a thread that has entered it
// (/proc/sys/net is the reading thread's namespace's).
func sysctls(ns *netns.NS, values map[string]string) error {
	return ns.Run(func() error {
		for key, v := range values {
			path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
			if err := os.WriteFile(path, []byte(v), 0); err != nil {
				return fmt.Errorf("lab: sysctl %s=%s in %s: %w", key, v, ns.Name, err)
			}
		}
		return nil
	})
}

// ipAll runs "ip -n ns ..." for each argument list, stopping at the
// first failure.
func ipAll(ns *netns.NS, cmds ...[]string) error {
	for _, args := range cmds {
		if _, err := ns.Exec(args...); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

func hardwareAddr(ns *netns.NS, ifname string) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := ns.Run(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lab: %s in %s: %w", ifname, ns.Name, err)
	}
	return mac, nil
}
