package bgp

import (
	"context"
	"net/netip"
	"time"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

// Session is one BGP session this node runs: a BGPPeer whose node
// selectors match this node, resolved to plain values. Sessions are keyed
// by Name; two Sessions with the same Name and equal settings are the same
// session, and a change of any field resets that session alone.
type Session struct {
	// Name is the BGPPeer's name; it labels metrics and ServiceBGPStatus.
	Name string
	// MyASN is this node's ASN; LocalASN, when not zero, replaces it on
	// the wire (BGPPeer localASN).
	MyASN, LocalASN uint32
	// PeerASN is the router's ASN; zero when DynamicASN is set.
	PeerASN    uint32
	DynamicASN config.DynamicASNMode
	// Address is the router; when it is not valid, Interface names the
	// link of an unnumbered session (the router's link-local address is
	// learned on it).
	Address   netip.Addr
	Interface string
	// Port is the router's TCP port (179 by default).
	Port uint16
	// Source, when valid, is the local address the session binds to.
	Source netip.Addr
	// VRF, when set, names the Linux VRF device the session lives in: its
	// TCP socket and its BFD session are bound to it (SO_BINDTODEVICE),
	// so the router is reached, and the local address and next hops
	// chosen, through the VRF's table and interfaces.
	VRF string
	// RouterID, when valid, is this node's BGP identifier; else the
	// node's address is used.
	RouterID netip.Addr
	// Timers; zero takes the BGP defaults (hold 90s, keepalive hold/3,
	// connect retry 120s).
	HoldTime, KeepaliveTime, ConnectTime time.Duration
	// Password enables TCP MD5 signatures (RFC 2385).
	Password string
	// EBGPMultiHop allows an eBGP router more than one hop away.
	EBGPMultiHop bool
	// GracefulRestart enables RFC 4724 graceful restart as a restarting
	// speaker: the router keeps this node's routes across a restart.
	GracefulRestart bool
	// DualStack carries both IPv4 and IPv6 routes on this one session;
	// otherwise the session carries only its own address family.
	DualStack bool
	// BFD, when not nil, runs a BFD session beside the BGP session,
	// multi-hop with EBGPMultiHop or to an iBGP router on no shared
	// network, single-hop otherwise; when BFD
	// declares the path down the BGP session is torn down (its routes
	// withdrawn at the router) until BFD is up again.
	BFD *bfd.Profile
}

// Route is one prefix advertised to one session, with its attributes.
type Route struct {
	Prefix netip.Prefix
	// LocalPref, when not zero, is sent on iBGP sessions.
	LocalPref uint32
	// Communities and LargeCommunities, sorted and without repeats.
	Communities      []uint32
	LargeCommunities []config.LargeCommunity
}

// Router runs this node's BGP sessions in process and advertises routes
// on them. Every method is safe for concurrent use. Bookkeeping follows
// the library: a call that fails leaves the Router as it was before it.
type Router interface {
	// SetSessions makes the running sessions exactly these: new ones are
	// created, missing ones stopped (their routes withdrawn), changed ones
	// reset; sessions whose settings are unchanged are not touched. Routes
	// given for a session survive its reset. A new session opens its
	// connection only after its first Update call (the speaker makes one in
	// the same round, with an empty list when it has nothing to advertise),
	// so a router that kept this node's routes across a graceful restart
	// never sees End-of-RIB before the routes are there again.
	SetSessions(ctx context.Context, sessions []Session) error
	// Update changes what one session advertises: each route in advertise
	// is sent (replacing the attributes of a route with the same prefix),
	// each prefix in withdraw is withdrawn. Its cost is linear in the
	// length of the two lists, whatever else is advertised.
	Update(ctx context.Context, session string, advertise []Route, withdraw []netip.Prefix) error
	// Established returns the names of the sessions that are up now,
	// sorted.
	Established() []string
	// Faults are the steps of running sessions that failed and are being
	// retried, sorted by session and field: a session that cannot work
	// as configured is kept and retried in the background, never dropped.
	Faults() []Fault
	// Changed is signalled, without blocking, whenever a session goes up
	// or down, and whenever its faults change.
	Changed() <-chan struct{}
}

// Fault is one step of a running session that failed and is being
// retried until it works.
type Fault struct {
	Session string
	// Field is the BGPPeer field the failing step serves:
	// "spec.bfdProfile" for the BFD session, "spec" for advertising the
	// routes and connecting.
	Field string
	// Err is the last failure, as text.
	Err string
}

// The implementation (GoBGP behind this boundary) is built with
//
//	func New(log logr.Logger, o Options) (*Sessions, error)
//
// where *Sessions implements Router and manager.Runnable: Start runs the
// sessions until its context ends, then closes them (with graceful
// restart, without withdrawing the routes). Options carry at least the
// metrics Registerer and the node's own address (the default router ID).
