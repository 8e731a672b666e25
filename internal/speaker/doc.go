// Package speaker is the core of the speaker, the per-node process that
// announces the addresses the controller assigned. It decides, on every
// node alone and from the same inputs, which node answers ARP/NDP for each
// address and what this node advertises over BGP, and keeps this node's
// announcement, routes, ServiceL2Status and ServiceBGPStatus objects,
// events, metrics and ConfigurationState in step with those decisions.
//
// The flow, one way:
//
//	Services, EndpointSlices, Nodes,           (controller-runtime caches)
//	pools, L2Advertisements, ServiceL2Status,
//	Membership.Live (peerjoin joins the other speakers), BGP password
//	Secrets (bgppasswords), the interface exclusions (excludel2)
//	   -> watch.go       events become work: a Service, an address,
//	                     every address (membership, fence), or
//	                     everything (Node, configuration; config.go
//	                     rebuilds it when configprint says the objects
//	                     changed)
//	   -> round.go       one round per batch of work: only the addresses
//	                     the work touches are decided again (invariant 10),
//	                     from what was read of each Service until it
//	                     changes; a round that takes long logs its steps
//	   -> l2decide       the owner of one address (facts: nodes,
//	                     endpoints; election: the hash order)
//	   -> Announcer      the addresses this node answers for
//	   -> objsync        this node's ServiceL2Status objects (l2status),
//	                     written in the background
//	   -> bgpround.go    BGP, per Service in the round: bgpdecide.Decide,
//	                     the route table (routes), one Router.Update per
//	                     session, ServiceBGPStatus (objsync.BGP)
//	   -> tell.go        events, metrics; configstate.go: ConfigurationState
//
// The handover rule (invariant 8): a node answers for an address only
// while it is the elected owner and no other live member holds a
// ServiceL2Status that guards the address. To stop, it calls Announce
// without the address, then shrinks or deletes its object. Objects are
// written in the background (objsync), after Announce, so a failover
// answers at once however many Services move; a node that starts waits
// until it has found the others plus StartGrace before it answers
// anything, which covers the owners whose objects are still on their way.
// Ownership is computed, not sticky: a node that comes back gets its
// addresses back, after the current owner has stopped and deleted its
// object. A killed node drops out of the membership, so failover does not
// wait for the API server; the new owner deletes the dead node's objects.
//
// The network side is behind three interfaces, Announcer (ARP/NDP,
// internal/speaker/layer2), Membership (gossip,
// internal/speaker/membership) and bgp.Router (BGP sessions,
// internal/speaker/bgp); nothing here opens a socket.
package speaker
