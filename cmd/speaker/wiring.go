package main

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadylb/steadylb/internal/speaker"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/internal/speaker/layer2"
	"github.com/steadylb/steadylb/internal/speaker/membership"
)

// The network side of the speaker is built here, behind the interfaces
// internal/speaker consumes: the ARP/NDP responders of
// internal/speaker/layer2, the gossip membership of
// internal/speaker/membership and the BGP sessions of
// internal/speaker/bgp.

// leaveTimeout bounds how long a stopping speaker waits for its leave
// message to go out. One gossip round (50 ms) is enough on a LAN; the rest
// is slack for a loaded node.
const leaveTimeout = time.Second

// announcer is the ARP/NDP responder and the signals it gives the
// speaker's core (speaker.Options.InterfacesChanged and LinkReturned, the
// latter for a carrier back or a stall).
type announcer struct {
	*layer2.Announcer
	interfacesChanged, linkReturned <-chan struct{}
}

// newAnnouncer returns the ARP/NDP responder. It is also a
// manager.Runnable; main runs it through stopThenLeave.
func newAnnouncer(log logr.Logger, f flags, reg prometheus.Registerer) announcer {
	interfacesChanged, signalInterfaces := signal()
	linkReturned, signalLink := signal()
	var node []netip.Addr
	if addr, err := netip.ParseAddr(f.host); err == nil {
		node = append(node, addr.Unmap())
	} else {
		log.Info("no node address (--host, METALLB_HOST): an address outside every subnet of this node is answered nowhere unless its L2Advertisement lists interfaces")
	}
	a := layer2.NewAnnouncer(log, layer2.Options{Registerer: reg, ReannounceInterval: f.announceInterval,
		InterfacesChanged: signalInterfaces, NodeAddresses: node,
		CarrierReturned: func(name string) {
			log.Info("carrier back on an interface; this node may have been replaced while it was cut off", "interface", name)
			signalLink()
		},
		// The announcer has already stopped answering; the speaker starts
		// over as when a link comes back.
		Stalled: func(time.Duration) { signalLink() },
	})
	return announcer{Announcer: a, interfacesChanged: interfacesChanged, linkReturned: linkReturned}
}

// newRouter returns the BGP sessions (GoBGP in process). It is also a
// manager.Runnable: its Start runs the sessions and, when the manager
// stops, closes them: with graceful restart when the speaker restarts,
// leaving the routes at the router until it is back; with Cease when
// departing says the node is leaving for good.
func newRouter(log logr.Logger, f flags, reg prometheus.Registerer, departing func(context.Context) bool) (*bgp.Sessions, error) {
	node, _ := netip.ParseAddr(f.host) // not an address: the router ID comes from the node name
	r, err := bgp.New(log, bgp.Options{Registerer: reg, NodeAddress: node, NodeName: f.nodeName, Departing: departing})
	if err != nil {
		return nil, fmt.Errorf("start BGP: %w", err)
	}
	return r, nil
}

// signal returns a channel and a function that signals it without
// blocking: one pending signal is enough, since the receiver reads the
// current state.
func signal() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// cluster is the membership and how to leave it.
type cluster struct {
	members speaker.Membership
	// leave tells the other speakers this one is going, once; later calls
	// do nothing. It is safe to call concurrently.
	leave func()
	// shutdown stops the membership without telling anyone, if leave has
	// not run; for the error paths.
	shutdown func()
	// useKey moves an encrypted membership to a new key, one step a call
	// (membership.Members.UseSecretKey); nil when it cannot change keys.
	useKey func(key []byte) (bool, error)
}

// newMembership returns the speaker membership. With --ml-bindport=0 it is
// this node alone: no gossip, every other speaker counts as gone.
func newMembership(log logr.Logger, f flags, key []byte, reg prometheus.Registerer, a *layer2.Announcer) (*cluster, error) {
	if f.mlBindPort == 0 {
		log.Info("running without a membership (--ml-bindport=0): this node is the only live speaker")
		return &cluster{members: &loneMember{node: f.nodeName}, leave: func() {}, shutdown: func() {}}, nil
	}
	m, err := membership.New(log, membership.Options{
		NodeName:      f.nodeName,
		BindAddr:      f.mlBindAddr,
		BindPort:      f.mlBindPort,
		AdvertiseAddr: advertiseAddr(f),
		SecretKey:     key,
		Registerer:    reg,
		// The announcer goes quiet the moment the others suspect this
		// node, and stops the moment they say they took its addresses;
		// the core's start over follows.
		OnSuspected:    a.Quiet,
		OnDeclaredDead: a.Fence,
	})
	if err != nil {
		return nil, fmt.Errorf("start the membership: %w", err)
	}
	// No frame before the membership has read what came before its
	// request: a declaration among it fences the announcer first.
	a.FollowMembership(m.CaughtUp)
	var once sync.Once
	leave := func() {
		once.Do(func() {
			if err := m.Leave(leaveTimeout); err != nil {
				log.Error(err, "leave the membership; the other speakers will detect the failure instead")
				return
			}
			log.Info("left the membership")
		})
	}
	shutdown := func() {
		if err := m.Shutdown(); err != nil {
			log.Error(err, "stop the membership")
		}
	}
	return &cluster{members: m, leave: leave, shutdown: shutdown, useKey: m.UseSecretKey}, nil
}

// advertiseAddr is what the peers are told to reach this speaker on: the
// bind address when it is a specific one, else the node's address
// (--host), since memberlist's own choice (the first private address) is
// wrong on nodes whose addresses are public.
func advertiseAddr(f flags) string {
	if a, err := netip.ParseAddr(f.mlBindAddr); err == nil && !a.IsUnspecified() {
		return ""
	}
	if _, err := netip.ParseAddr(f.host); err == nil {
		return f.host
	}
	return ""
}

// stopThenLeave runs the announcer and, once it has stopped answering,
// leaves the membership. This is the shutdown order on SIGTERM:
//
//  1. the signal cancels the manager's context; the announcer stops every
//     responder before its Start returns (nothing is answered after that);
//  2. the membership is left, so the other speakers drop this node at once
//     and the new owners start without waiting for failure detection or
//     for this node's ServiceL2Status objects to go;
//  3. the core (speaker.Speaker) deletes this node's ServiceL2Status
//     objects (its Options.Stopped is the same leave, a no-op by then).
//
// Leaving before step 1 would let a new owner answer while this node still
// does; leaving only after step 3 would make every address wait for the
// API server on the way out.
type stopThenLeave struct {
	announcer manager.Runnable
	leave     func()
}

var _ manager.Runnable = stopThenLeave{}

func (r stopThenLeave) Start(ctx context.Context) error {
	err := r.announcer.Start(ctx)
	r.leave()
	return err
}

// loneMember is a membership of this node alone: with --ml-bindport=0
// there is no one else to hear from.
type loneMember struct{ node string }

var _ speaker.Membership = (*loneMember)(nil)

func (m *loneMember) Join([]string) (int, error)    { return 0, nil }
func (m *loneMember) Live() []string                { return []string{m.node} }
func (m *loneMember) Changed() <-chan struct{}      { return nil }
func (m *loneMember) DeclaredDead() <-chan struct{} { return nil }
