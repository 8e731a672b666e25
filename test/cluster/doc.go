// Package cluster turns the network-namespace lab (test/lab) into a small
// Kubernetes cluster that carries traffic, for the suites that send
// requests to a LoadBalancer address and count what a user would feel:
//
//   - kube-proxy (built by hack/kube-proxy.sh from the Kubernetes module at
//     the control plane's version) runs in every node's namespace, in
//     nftables mode, with the node's Node object carrying its addresses;
//   - application Pods (test/backend) run in pod namespaces on the nodes,
//     wired by the CNI bridge plugin (lab.Node.Pod); the nodes route each
//     other's pod networks; the test writes their Pod objects and the
//     EndpointSlice the EndpointSlice controller would (ready, serving,
//     terminating), so kube-proxy and the speakers see real endpoints;
//   - steadylb's controller and speakers are started from the shipped
//     manifests (config/default rendered with the kustomize API): the
//     Deployment's and DaemonSet's containers become processes with
//     exactly their args, env, volumes, service account token and
//     security context (test/podproc), the speakers on their nodes'
//     network, each controller replica in a namespace of its own;
//   - the lab's client sends the load (test/load) from its namespace.
//
// Run builds all of it for a test binary, from TestMain. Everything needs
// root, iproute2, nftables and the CNI plugins; suites skip with the
// reason elsewhere. kube-proxy must have been built once.
package cluster
