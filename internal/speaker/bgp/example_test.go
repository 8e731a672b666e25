package bgp_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-logr/logr"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// The speaker sets the sessions of this node, then makes each one's
// first Update in the same round (here it stops before: the Update would
// connect to the router).
func Example() {
	r, err := bgp.New(logr.Discard(), bgp.Options{NodeAddress: netip.MustParseAddr("198.51.100.2"),
		BFD: bfd.NewManager(logr.Discard(), bfd.Options{})})
	if err != nil {
		panic(err)
	}
	err = r.SetSessions(context.Background(), []bgp.Session{{
		Name: "tor", MyASN: 64501, PeerASN: 64500, Address: netip.MustParseAddr("198.51.100.1"),
		HoldTime: 9 * time.Second, GracefulRestart: true, BFD: &bfd.Profile{},
	}})
	fmt.Println(err, r.Established())
	// Output: <nil> []
}
