package bgp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// grConfig: bgpd is a graceful restart helper (FRR's default) for two
// neighbors; the node asks for it on one session only.
const grConfig = `router bgp 64500
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 neighbor 198.51.100.2 remote-as 64501
 neighbor 198.51.100.3 remote-as 64502
!
`

func TestGracefulRestart(t *testing.T) {
	l := newLab(t, grConfig)
	const withGR, withoutGR = "203.0.113.80/32", "203.0.113.81/32"
	cfg := routerConfig{
		Sessions: []bgp.Session{
			{Name: "gr", MyASN: 64501, PeerASN: 64500, Address: routerV4, Source: nodeV4, GracefulRestart: true, ConnectTime: 5 * time.Second},
			{Name: "plain", MyASN: 64502, PeerASN: 64500, Address: routerV4, Source: nodeExtra[0], ConnectTime: 5 * time.Second},
		},
		Routes: map[string][]bgp.Route{"gr": {{Prefix: prefix(withGR)}}, "plain": {{Prefix: prefix(withoutGR)}}},
	}
	sp := l.startSpeaker(t, cfg)
	l.waitRoute(t, withGR, true, 20*time.Second)
	l.waitRoute(t, withoutGR, true, 20*time.Second)

	sp.kill()
	t.Run("without graceful restart the routes go with the process", func(t *testing.T) {
		l.waitRoute(t, withoutGR, false, 10*time.Second)
	})
	t.Run("with graceful restart the router keeps them, stale", func(t *testing.T) {
		l.waitPeer(t, "ipv4Unicast", nodeV4.String(), "Active", 10*time.Second)
		paths := l.frr.BGPRoute(t, withGR)
		if len(paths) != 1 || !paths[0].Stale {
			t.Fatalf("bgpd's paths for %s: %+v, want one, stale", withGR, paths)
		}
	})
	t.Run("a restarted process refreshes them without a gap", func(t *testing.T) {
		l.startSpeaker(t, cfg)
		waitFor(t, withGR+" refreshed", 30*time.Second, func() error {
			paths := l.frr.BGPRoute(t, withGR)
			switch {
			case len(paths) == 0:
				t.Fatalf("%s was withdrawn during the restart", withGR)
			case paths[0].Stale:
				return fmt.Errorf("still stale")
			}
			return nil
		})
		l.waitRoute(t, withoutGR, true, 20*time.Second)
	})
}
