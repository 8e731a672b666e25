// Package membership tells a speaker which other speakers are alive. It
// wraps hashicorp/memberlist (SWIM gossip with the Lifeguard extensions)
// and supplies liveness only: who owns an address is computed from it by
// package election, never negotiated here.
//
// # Use
//
//	m, err := membership.New(log, membership.Options{NodeName: node, BindAddr: hostIP, SecretKey: key})
//	n, err := m.Join(peerIPs)     // any time peers change; known members are skipped
//	for range m.Changed() {       // coalesced: one signal for any number of changes
//		live := m.Live()          // sorted names, this node included
//	}
//	<-m.DeclaredDead()            // others took this node for dead: stop answering
//	m.CaughtUp(limit)             // before a frame: everything that came before was read
//	m.Leave(time.Second)          // on SIGTERM: peers drop this node at once
//
// Members runs three goroutines of its own, the transport's (it takes the
// "declared dead" packets out of memberlist's stream; fence.go), one that
// publishes a new fence token, and one that checks each departure before
// acting on it (departures.go), besides memberlist's, all from New until
// Leave or Shutdown, which waits for them. Join runs at most 8 contacts
// at once and waits for them before it returns. Nothing else starts a
// goroutine: the "declared dead" news is one packet write each, and a
// marker CaughtUp holds back (at most one at a time) is sent from a
// timer.
//
// # Failure detection
//
// memberlist's LAN defaults take several seconds to declare a killed node
// dead (one probe a second, then a suspicion of at least 4s). A speaker
// needs it well under a second, so on a LAN (sub-millisecond round
// trips) New uses:
//
//	setting              here   LAN default  why
//	ProbeInterval        100ms  1s           one probe of a random peer per interval
//	ProbeTimeout         50ms   500ms        direct ack deadline; LAN RTT is < 1ms
//	IndirectChecks       3      3            peers asked to probe on a miss
//	SuspicionMult        2      4            suspicion = 2 x max(1, log10 N) x 100ms
//	GossipInterval       50ms   200ms        how soon news spreads; free when idle
//	GossipNodes          3      3            fan-out per gossip round
//	RetransmitMult       4      4            each message sent 4 x ceil(log10(N+1)) times
//	PushPullInterval     30s    30s          full-state sync (scaled up with N)
//	TCPTimeout           3s     10s          per join/push-pull contact
//	GossipToTheDeadTime  30s    30s          a dead node is still told, to refute
//
// A dead node is noticed when a member probes it: no ack within 50ms,
// then indirect probes through 3 other members and a TCP ping, all given
// until the end of the 100ms probe round. The prober then marks it
// suspect and gossips that; when nobody hears from the node during the
// suspicion time, it is declared dead and every member's Live() drops it.
//
//	detection = wait for a probe + 100ms + 2 x max(1, log10 N) x 100ms + gossip
//
// With N <= 10 that is 300ms plus up to 2 probe intervals' wait and one
// gossip round: 0.3-0.55s. BenchmarkFailureDetection (three members on
// loopback; five runs of 10 to 20 failures) measured p50 0.42-0.46s and
// max 0.46-0.65s from Shutdown until both survivors had dropped the
// member. At N = 100 the
// suspicion grows to 400ms (about 0.6s in all), at N = 1,000 to 600ms
// (0.8-1.2s, since the first probe of a given node is then a random
// event, 100ms on average). SuspicionMult 2 gives no Lifeguard
// "confirmations" (memberlist expects SuspicionMult-2 of them), so the
// time does not depend on other members agreeing.
//
// The price of fast detection: a member that cannot answer for about the
// probe round plus the suspicion time (0.3s in a small cluster, 0.7s at
// 1,000) is declared dead, for example a node frozen or CPU-throttled that
// long. The others take its addresses over at once while it, unaware,
// still answers, so every member that sees a member gone tells it so
// (DeclaredDead; fence.go): the speaker then stops answering and starts
// over. A member acts on a death only once memberlist has handled what
// it had received before it (departures.go): a starved node's suspicion
// timer can fire while the suspect's refutation waits unread, and such a
// false alarm then moves nothing. A frame waits for CaughtUp, so a member whose reading is starved
// while its responders run answers nothing once a declaration is waiting
// for it (inbox.go). It refutes as soon as it runs again and is live once more within
// a gossip round, and its addresses come back by the clean handover. Lifeguard's self-awareness keeps a member that is
// itself slow from accusing healthy peers: it probes up to 8 times more
// slowly while it misses acks (steadylb_memberlist_health_score). Do not
// give the speaker a CPU limit that throttles it for tenths of a second.
//
// A member that calls Leave broadcasts that it is leaving and waits (up
// to the timeout) until the message has gone out; peers drop it when it
// arrives, without waiting for detection.
//
// # Traffic at 1,000 nodes
//
// Per member and direction, in steady state (nothing changing), with
// encryption (each packet carries 29 bytes of AES-GCM overhead) and node
// names of 27 characters:
//
//   - Probes: 10 pings a second sent, and on average 10 received, each
//     answered by an ack: 20 packets a second out, 20 in, about 94 bytes
//     of payload on average (ping ~140, ack ~50; measured by
//     BenchmarkSteadyStateTraffic), 122 bytes with the IPv4 and UDP
//     headers: 2.4 KB/s. This does not grow with N.
//   - Gossip: nothing. A gossip round sends only pending news, and probes
//     and acks carry news too (piggybacked) when they have room.
//   - Push/pull: the full member list, about 90 bytes a member, 90 KB at
//     1,000 (memberlist compresses it; less on the wire). Its interval
//     scales with N: 30s x (ceil(log2 N - 5) + 1) = 180s at 1,000. A member
//     starts one exchange per interval and is picked by another about as
//     often, each exchange sending its list once: 2 x 90 KB / 180s = 1 KB/s.
//
// About 3.5 KB/s (28 kbit/s) per member each way, all unicast, and 3.5 MB/s
// for the whole 1,000-node cluster. Each change (a join, a suspicion, a
// death) adds one message of about 100 bytes that every member sends
// 4 x ceil(log10(N+1)) = 16 times, packed with others into packets of at
// most 1,400 bytes: a burst bounded by the number of changes, not by N².
//
// # Encryption and the MetalLB Secret
//
// With Options.SecretKey every packet and stream is AES-GCM encrypted and
// authenticated, and unencrypted or wrongly keyed traffic is dropped, so
// only speakers sharing the key can join; the "declared dead" message is
// sealed with the same key. Without a key nothing is authenticated:
// anyone who reaches the port can join or gossip, and a "declared dead"
// message is only checked to come from a member's own address and to name
// the member's current fence token, which anyone who reads the gossip
// can learn (fence.go). ReadSecretKey reads a MetalLB
// memberlist Secret (key "secretkey", mounted as a directory or given as
// the file) and derives the key exactly as MetalLB does, so an existing
// Secret works unchanged; see KeyFromSecret for what that derivation is.
//
// # Metrics
//
// With Options.Registerer: steadylb_memberlist_members{state="alive"|"gone"},
// steadylb_memberlist_member_events_total{event="join"|"leave"|"update"},
// steadylb_memberlist_health_score, steadylb_memberlist_packets_sent_total,
// steadylb_memberlist_packet_sent_bytes_total,
// steadylb_memberlist_packets_dropped_total and
// steadylb_memberlist_declared_dead_messages_total{result="accepted"|
// "stale"|"refused"}. MetalLB exports no
// memberlist metrics, so these have our own prefix. memberlist does not
// say from outside whether a member failed or left, nor which members are
// suspect, so "gone" covers both and "alive" includes suspects.
//
// # Logging
//
// Every line this package and memberlist log goes through a queue of
// 1,024 lines that one goroutine writes (asyncLog): memberlist logs while
// it holds its state lock, and a log output that does not keep up (a
// starved container runtime's pipe) would otherwise stop the failure
// detection. A line that finds the queue full is dropped; the next one
// written says how many were. A line that waited over 10 ms carries
// loggedAt, the time it was logged.
package membership
