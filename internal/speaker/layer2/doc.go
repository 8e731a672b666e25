// Package layer2 answers ARP (IPv4) and NDP neighbor solicitations (IPv6)
// for the load-balancer addresses this node owns, and announces the ones it
// takes over. It decides nothing: the speaker core tells it, with
// Announcer.Announce, which addresses to answer on which interfaces.
//
//	Announcer ── Announce(want) ──► plan: address → interfaces (makePlan)
//	    │                                 │
//	    │ Start: rescan every 2 s         ▼
//	    └──────────────────────► responders, one per (interface, protocol)
//	                              ├── reader: frame → question → answer
//	                              └── announcer: takeover bursts, re-announce
//
// # Responders
//
// A responder reads one packet socket (FrameConn), filtered in the kernel
// by a BPF program to ARP requests or to ICMPv6 neighbor solicitations, and
// holds its address set in a map under a read-write lock. Answering a frame
// is one parse and one map lookup; the set is swapped whole, and every
// answer and announcement is written with the read lock held, so when
// Announce returns no frame for a removed address is in flight or will be
// sent. That is the property a clean handover needs: the old owner stops
// before the new one starts.
//
// IPv6 uses a packet socket too, not an ICMPv6 socket, so answers leave at
// once with the interface's MAC and the target as source, without the
// kernel first resolving the asker; a helper UDP socket joins each
// address's solicited-node group so NIC filters and MLD-snooping switches
// pass the solicitations (see ndpConn).
//
// # Announcements
//
// Addresses new to a responder get a gratuitous ARP request and reply, or
// an unsolicited neighbor advertisement with the override flag, at once and
// three more times 250 ms apart (announceSpacing says why), and optionally
// every Options.ReannounceInterval.
//
// # Interfaces
//
// An address whose advertisement lists no interfaces is answered on the
// usable interfaces (up, broadcast-capable, resolving neighbours, not
// loopback, not enslaved to a bond or bridge: Link.Usable) that face its
// LAN: those on its subnet (an address prefix or a gateway-less route of
// the main table covers it), else those carrying the node's own address.
// A node's pod veths, CNI and container bridges, tunnels and dummy devices
// are on neither, so they never answer, whatever their names. Interfaces
// matching an exclusion pattern (SetExcluded) never answer, listed or not.
// The list comes from netlink dumps (SystemLinks), repeated by Start every
// RescanInterval, so interfaces that appear, vanish, are re-created or
// change their MAC are followed; a listed interface that does not exist is
// reported as missing and the others keep answering.
//
// The carrier watch (CarrierWatch) reports a carrier that comes back only
// on an interface that answers for an address, or did when the carrier
// went: a pod's veth coming up is not a node coming back.
//
// # The gate
//
// Every frame a responder sends, answer or announcement, first asks the
// gate (gate.go), which stops them all after a stall of the process longer
// than Options.StallLimit while answering, and those of an answering
// interface once its carrier went: a node frozen or cut off may have been
// declared dead and replaced, and must not send a frame before the speaker
// has heard it and started over (Options.Stalled, CarrierReturned). An
// Announce of nothing opens the gate again.
//
// # Metrics
//
// metallb_layer2_requests_received, metallb_layer2_responses_sent and
// metallb_layer2_gratuitous_sent, counters with label "ip", one series per
// address in the set, deleted when the address leaves it.
package layer2
