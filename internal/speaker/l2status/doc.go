// Package l2status writes this node's ServiceL2Status objects, MetalLB's
// record of which node answers ARP/NDP for a Service, and reads the ones
// other nodes wrote.
//
// The objects are MetalLB's shape: in the speaker's namespace, named "l2-"
// plus a generated suffix, labelled metallb.io/node,
// metallb.io/service-name and metallb.io/service-namespace, with
// status.node, serviceName, serviceNamespace and the answering interfaces.
// steadylb adds one annotation, AnnotationAddresses, listing the addresses
// the node answers for on behalf of the Service. Speakers elect a node per
// address, so a dual-stack Service may be answered for by two nodes, each
// with its own object; the annotation lets a speaker tell which address an
// object guards. An object without it (written by MetalLB) is taken to
// guard every address of its Service.
//
// The speakers use these objects as their handover handshake (see
// internal/speaker): a node does not start answering for an address while
// another live node's object guards it, writes its own object once it
// answers, and deletes it after it has stopped. Writer keeps the objects of one node
// and is their only writer; other nodes only ever delete them, when their
// node has left the membership.
package l2status
