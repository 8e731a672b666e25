package speaker

import (
	"context"
	"net/netip"
)

// Announcer answers ARP (IPv4) and NDP (IPv6) for a set of addresses on
// this node. internal/speaker/layer2 implements it on real sockets.
type Announcer interface {
	// Announce replaces the set of addresses this node answers for. want
	// maps each address to the interfaces allowed to answer for it (empty:
	// every suitable interface). Addresses new in the set are announced
	// with gratuitous ARP / unsolicited NA at once; addresses dropped from
	// it are no longer answered once Announce returns, which the handover
	// depends on. answering names the interfaces that really answer per
	// address; missing names listed interfaces this host does not have.
	Announce(ctx context.Context, want map[netip.Addr][]string) (answering map[netip.Addr][]string, missing []string)
}

// Membership reports which speakers are alive. internal/speaker/membership
// implements it with gossip.
type Membership interface {
	// Join contacts peers ("host" or "host:port") and returns how many
	// answered.
	Join(addrs []string) (int, error)
	// Live returns the names of the live nodes, this one included, sorted.
	Live() []string
	// Changed signals, coalesced, every change of Live.
	Changed() <-chan struct{}
	// DeclaredDead signals, coalesced, that another member declared this
	// node dead: it may have taken this node's addresses over while this
	// node still answers them.
	DeclaredDead() <-chan struct{}
}
