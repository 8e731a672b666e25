// Package bgp runs this node's BGP sessions in process and advertises the
// routes the speaker decides on them. Router is the boundary: the
// speaker's core speaks only in Sessions and Routes; the library that
// implements BGP (GoBGP v4, used as a library: no gRPC port, no sidecar)
// stays behind it, and no GoBGP type leaves this package.
//
//	Sessions (Router, manager.Runnable)
//	  ├── runner "peer-a" ── GoBGP BgpServer (its ASN, router ID, routes)
//	  │                        └── one neighbor, dialled by us; nothing listens
//	  ├── runner "peer-b" ── GoBGP BgpServer ...
//	  └── bfd.Manager ── one BFD session per session with BFD set
//	        └── OnBFDEvent: path down -> neighbor shut; up -> enabled
//
// # One server per session
//
// Each Session has its own GoBGP server: BGPPeers may differ in myASN and
// routerID, a session's routes are its own, and a change of any setting
// stops that server and starts a new one, so no other session notices.
// The server opens no listening socket (ListenPort -1): sessions are
// active. The neighbor is added on the session's first Update, so the
// routes are in place before the first UPDATE and End-of-RIB go out.
//
// # Routes
//
// Update turns each Route into one GoBGP path (origin IGP; LocalPref on
// iBGP sessions only; standard and large communities) and hands the list
// to GoBGP in one call, and the withdrawals in another: its cost is linear
// in its arguments. The next hop is the session's local address, which
// GoBGP fills in; a dual-stack session gives the prefixes of its other
// family an address of that family from the interface it talks from.
// Routes of a family the session does not carry are kept but not sent.
// A session's routes survive its reset.
//
// # Failures are retried, never dropped
//
// A session whose settings are accepted stays, whatever fails later. The
// steps that can fail after SetSessions accepted a session (advertising
// the routes a reset carried over, adding the neighbor, adding the BFD
// session, which needs a route to the router) are recorded as the
// session's Faults, counted in steadylb_bgp_session_retrying, and tried
// again every RetryInterval by a loop Start owns, and by the session's
// next Update; the routes a failed reset could not give GoBGP stay owed
// until one of them succeeds. SetSessions fails only for a session it
// refuses outright (validation, or a server that cannot start), and then
// changes nothing.
//
// # Graceful restart (RFC 4724)
//
// With GracefulRestart the session advertises the capability with the
// Restart State bit and, per family, the Forwarding State bit, and a
// restart time (DefaultRestartTime). When this process dies, the router
// keeps its routes as stale; the restarted process connects only after
// its first Update, sends the routes again and End-of-RIB, and the router
// drops the stale routes that were not refreshed. Start's end closes such
// sessions without a NOTIFICATION for the same reason, unless
// Options.Departing says the node is leaving for good: then every session
// closes with Cease and the routers withdraw the routes at once. Without
// graceful restart, the router drops the routes when the session goes.
//
// # BFD
//
// A Session with BFD runs a session of package bfd between the session's
// local address and the router: multi-hop (RFC 5883) when the session is
// eBGP multi-hop, or iBGP to a router on no network this node shares (as
// FRR decides for its side); single-hop otherwise. When BFD declares the path down
// the BGP neighbor is shut down (GoBGP closes the session and stops
// reconnecting; the router drops the routes when its own BFD or hold timer
// tells it) and enabled again when BFD is up. A router that takes its BFD
// session down on purpose (AdminDown) does not count as a path failure.
//
// # Metrics
//
// MetalLB's metallb_bgp_session_up, metallb_bgp_updates_total (UPDATE
// messages sent), metallb_bgp_announced_prefixes_total and
// metallb_bgp_pending_prefixes_total (routes given and not yet sent),
// labelled as MetalLB's FRR mode labels them: peer "address:port" and vrf
// "default". They are read from GoBGP's own counters at scrape time.
//
// # VRFs
//
// A Session with VRF lives in that Linux VRF: GoBGP binds its TCP socket
// to the VRF device (its BindInterface option, SO_BINDTODEVICE before the
// dial), the local address towards the router (BFD's, and the other
// family's next hop) is looked up from a socket bound the same way, and
// the BFD session runs on sockets bound to it; so the router is reached,
// and the next hops chosen, through the VRF's table and interfaces, and
// nothing is added to the host's main table. Until the VRF device exists
// the session does not connect (a Fault on "spec.vrf", retried every
// RetryInterval); its metrics carry vrf as their "vrf" label.
//
// # Unnumbered sessions
//
// An unnumbered session (Interface) relies on GoBGP finding the router's
// link-local address in the interface's neighbor table: the router must
// have been heard on the link before the session's first Update, or that
// Update fails and is retried.
package bgp
