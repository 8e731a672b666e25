// Package bgpstatus writes this node's ServiceBGPStatus objects, MetalLB's
// record of which peers a node advertises a Service to.
//
// The objects are MetalLB's shape: in the speaker's namespace, named
// "bgp-" plus a generated suffix, labelled metallb.io/node,
// metallb.io/service-name and metallb.io/service-namespace, with
// status.node, serviceName, serviceNamespace and the peers (BGPPeer
// names). There is one per Service on each node that advertises it. Unlike
// ServiceL2Status they play no part in a handover: every eligible node
// advertises, so an object only reports. Writer keeps one node's objects
// and is their only writer.
package bgpstatus
