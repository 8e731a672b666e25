package layer2_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadylb/steadylb/internal/speaker/layer2"
)

// The speaker adds the Announcer to its manager (it is a Runnable) and
// calls Announce with this node's addresses whenever its decision changes.
// (Needs root to open packet sockets, so it is not run.)
func ExampleAnnouncer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := layer2.NewAnnouncer(logr.Discard(), layer2.Options{Registerer: prometheus.NewRegistry()})
	go a.Start(ctx) // mgr.Add(a) in the speaker

	answering, missing := a.Announce(ctx, map[netip.Addr][]string{
		netip.MustParseAddr("198.51.100.10"): nil,              // every usable interface
		netip.MustParseAddr("2001:db8::10"):  {"eth0", "eth9"}, // only these
	})
	fmt.Println(answering, missing) // e.g. map[198.51.100.10:[eth0 eth1] 2001:db8::10:[eth0]] [eth9]

	// Handing an address over: stop first (this returns only once nothing
	// answers for it any more), then tell the API server.
	a.Announce(ctx, map[netip.Addr][]string{netip.MustParseAddr("2001:db8::10"): {"eth0"}})
}
