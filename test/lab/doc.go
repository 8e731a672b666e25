// Package lab builds a small layer-2 cluster in Linux network namespaces
// for the speaker's end-to-end suites and benchmarks: real speaker
// processes on their own network stacks, one shared Ethernet segment, and
// a client that asks with real ARP and NDP frames.
//
//	              namespace "lan": two bridges, no addresses
//	     ┌──────────── br0 (segment a) ────────────┐  ┌─ br1 (segment b) ─┐
//	client eth0                        node-i eth0     client eth1  node-i eth1
//	198.51.100.200/24                  198.51.100.i/24   (link-local only)
//	2001:db8:100::200/64               2001:db8:100::i/64
//
//	node-i: 127.0.0.1:<API server port> ──forwarder──► host 127.0.0.1:<port>
//
// Every node namespace reaches the test's kube-apiserver (test/testenv,
// on the host's loopback) through a forwarder whose listening socket was
// opened inside the node namespace on its own 127.0.0.1, on the API
// server's port, so the suite's kubeconfig (its server URL and
// certificates) works unchanged in every node. The forwarder can be cut
// (bytes stop moving, connections stay open, as behind a dead link).
//
// No kubelet runs, so the lab writes what the speakers read from it: a
// Node object per node (label kubernetes.io/hostname) and a speaker Pod
// per node (labels app=metallb,component=speaker, spec.nodeName, and, in
// its status subresource, podIP/podIPs = the node's addresses on segment
// a), the peers a speaker joins.
//
// Speakers are the real cmd/speaker binary, started inside a node
// namespace with `ip netns exec`, so its sockets, netlink dumps and
// memberlist all see only that node; Speaker sends SIGKILL or SIGTERM.
// Segment a's port of a node can be taken down (CutLink) as a pulled cable
// would.
//
// Pods (Node.StartPod, Node.Pod) are network namespaces wired the way a
// kubelet's container runtime wires them, by the reference CNI bridge
// plugin itself (Debian package containernetworking-plugins): on the
// node, a bridge cni0 with the gateway of the node's pod networks
// (10.244.i.0/24, 2001:db8:244:i::/64) and one veth port per pod; in the
// pod, eth0 with an address from host-local IPAM and default routes
// through the bridge. A process started in a pod (Pod.Start) is its
// container, e.g. a backend. Nothing routes between nodes' pod networks.
//
// Use only 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 for
// addresses announced in the lab. Everything needs root and iproute2:
// Unavailable says why not, and suites skip with that message.
//
// A lab is meant to last for a test binary (New in TestMain, Close after
// m.Run): creating namespaces and veths costs a few hundred milliseconds,
// starting speakers about a second, so suites start speakers per test.
package lab
