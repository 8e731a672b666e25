// Package bfd runs asynchronous BFD (RFC 5880 over UDP), single-hop (RFC
// 5881) and multi-hop (RFC 5883), so the BGP side can tear a session down
// as soon as the path to its peer fails, in well under a second instead
// of a hold time. It decides nothing about BGP: it reports session state
// changes, and its caller acts on them.
//
//	Manager ── AddSession / RemoveSession / Update / Status
//	   │
//	   ├── per Transport (family, single- or multi-hop, VRF): PacketConn
//	   │   (ListenUDP: receive on 3784 or 4784, send from one port in
//	   │   49152-65535 with TTL 255)
//	   │      reader ── Decode ── TTL check ── demux ──┐
//	   ├── timer loop: one clock timer, a heap of      ├──► session (pure state machine)
//	   │   session deadlines ──────────────────────────┘        │
//	   └── dispatcher ◄── events ◄────────────────────── state changes
//	       └── Options.OnStateChange(Event{Peer, Old, New, Diag, ...})
//
// # Sessions
//
// A session is the RFC 5880 state machine (AdminDown, Down, Init, Up) with
// its timers. It is pure: it gets the time and the packets demultiplexed
// to it and answers with the packet to send and the state it entered, so
// it is unit-tested without clock, socket or goroutine. The Manager owns
// them all under one mutex, one timer and one reader per family; sending
// a packet is an encode into a reused buffer and one sendmsg.
//
// Timers follow RFC 5880: while not Up a session sends at most once a
// second (Desired Min TX 1 s); once Up, at the slower of its
// TransmitInterval and the peer's Required Min RX, shortened by a random
// 0-25 % (10-25 % with a detect multiplier of 1). The peer is declared
// lost after its Detect Mult times the slower of our ReceiveInterval and
// its Desired Min TX: with the defaults, 3 x 300 ms. Every change of the
// advertised intervals runs a Poll Sequence; a longer transmit interval
// or a shorter receive interval takes effect only once the peer has
// confirmed it with Final. A received Poll is answered at once.
//
// Passive sessions send nothing until the peer's first packet. A peer
// asking for Demand mode gets no periodic packets, as RFC 5880 requires;
// we never ask for it. RemoveSession sends AdminDown (diag 7) for one
// detection time before the session is forgotten, so the peer goes Down
// with "neighbor signaled session down" rather than timing out; when a
// peer does that to us, the Event says so (PeerAdminDown), and RFC 5882
// advises clients not to treat it as a path failure.
//
// Local discriminators are random, nonzero and unique. A packet is
// matched to its session by Your Discriminator, or by its addresses (and
// interface) while the peer does not know ours yet; either way it must
// come from the session's peer to its local address, through its
// interface when it has one.
//
// # Transport (RFC 5881, RFC 5883)
//
// A session's Transport is its address family, whether it is multi-hop,
// and its VRF. Per Transport, one socket bound to the wildcard address
// receives on port 3784 (single-hop) or 4784 (multi-hop) with the TTL or
// hop limit, destination and interface of each datagram (IP_RECVTTL /
// IPV6_RECVHOPLIMIT and packet info), and one bound to a random port of
// 49152-65535 sends every session's packets with TTL 255 and, per packet,
// the session's local address and interface. In a VRF both sockets are
// bound to the VRF device (SO_BINDTODEVICE), so packets follow the VRF's
// table. The single-hop Transports of the default VRF open with Start;
// the others when the first session needing them is added (a failure
// fails that AddSession, so the caller retries), and packets due while
// one cannot be opened try again.
//
// A received single-hop packet whose TTL is not 255 is dropped: it
// crossed a router (the GTSM check single-hop BFD relies on). A
// multi-hop packet must carry at least its session's Profile.MinimumTTL
// (254 by default, one router crossed), checked once the packet is
// matched to its session; multi-hop sessions have no interface.
//
// # Not implemented
//
//   - Authentication: packets with the A bit are discarded (RFC 5880
//     6.8.6 requires that of a session without authentication) and
//     counted as reason "authentication".
//   - The echo function: EchoMode and EchoInterval are accepted and
//     ignored; sessions advertise Required Min Echo RX 0, so peers send
//     no echo packets.
//   - Demand mode.
//
// # Metrics
//
// MetalLB's names and labels (peer, the remote address; vrf, the session's
// VRF or "default"): metallb_bfd_session_up (gauge), metallb_bfd_control_packet_input,
// metallb_bfd_control_packet_output, metallb_bfd_session_up_events and
// metallb_bfd_session_down_events (counters; down events count leaving
// Up). steadylb_bfd_control_packets_discarded_total{reason} counts packets
// dropped before reaching a session (ttl, malformed, authentication,
// no_session). MetalLB's FRR exporter also has echo packet and zebra
// notification counters; without echo or zebra they do not exist here.
package bfd
