package frr

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// BGPPeer is one neighbor of "show bgp summary json".
type BGPPeer struct {
	RemoteAS               uint32 `json:"remoteAs"`
	LocalAS                uint32 `json:"localAs"`
	State                  string `json:"state"`
	PfxRcd                 int    `json:"pfxRcd"`
	ConnectionsEstablished int    `json:"connectionsEstablished"`
	ConnectionsDropped     int    `json:"connectionsDropped"`
}

// BGPSummary returns bgpd's neighbors per address family ("ipv4Unicast",
// "ipv6Unicast"), keyed by neighbor address.
func (r *Router) BGPSummary(tb testing.TB) map[string]map[string]BGPPeer {
	tb.Helper()
	var out map[string]struct {
		Peers map[string]BGPPeer `json:"peers"`
	}
	r.vtyJSON(tb, &out, "show bgp summary json")
	sum := make(map[string]map[string]BGPPeer, len(out))
	for fam, v := range out {
		sum[fam] = v.Peers
	}
	return sum
}

// BGPPath is one path of "show bgp <afi> unicast <prefix> json".
type BGPPath struct {
	Origin    string `json:"origin"`
	LocalPref *int   `json:"locPrf"`
	Valid     bool   `json:"valid"`
	Stale     bool   `json:"stale"`
	ASPath    struct {
		String string `json:"string"`
	} `json:"aspath"`
	Community *struct {
		List []string `json:"list"`
	} `json:"community"`
	LargeCommunity *struct {
		List []string `json:"list"`
	} `json:"largeCommunity"`
	NextHops []struct {
		IP    string `json:"ip"`
		Scope string `json:"scope"`
	} `json:"nexthops"`
	Peer struct {
		PeerID   string `json:"peerId"`
		RouterID string `json:"routerId"`
		Type     string `json:"type"`
	} `json:"peer"`
}

// BGPRoutes returns the prefixes bgpd holds for afi ("ipv4", "ipv6"),
// each with its number of paths.
func (r *Router) BGPRoutes(tb testing.TB, afi string) map[string]int {
	tb.Helper()
	var out struct {
		Routes map[string][]json.RawMessage `json:"routes"`
	}
	r.vtyJSON(tb, &out, fmt.Sprintf("show bgp %s unicast json", afi))
	routes := make(map[string]int, len(out.Routes))
	for p, paths := range out.Routes {
		routes[p] = len(paths)
	}
	return routes
}

// BGPRoute returns bgpd's paths for one prefix (none when it has none).
func (r *Router) BGPRoute(tb testing.TB, prefix string) []BGPPath {
	tb.Helper()
	afi := "ipv4"
	for _, c := range prefix {
		if c == ':' {
			afi = "ipv6"
			break
		}
	}
	var out struct {
		Paths []BGPPath `json:"paths"`
	}
	r.vtyJSON(tb, &out, fmt.Sprintf("show bgp %s unicast %s json", afi, prefix))
	return out.Paths
}

func (r *Router) vtyJSON(tb testing.TB, v any, cmd string) {
	tb.Helper()
	out, err := r.vtysh("bgpd", cmd)
	if err == nil {
		if err = json.Unmarshal([]byte(out), v); err != nil {
			err = errors.Join(fmt.Errorf("parse %s: %q", cmd, out), err)
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// BGPNeighborChange is one "%ADJCHANGE" line of bgpd's log; the
// configuration must turn on "bgp log-neighbor-changes" (Debian's
// traditional profile leaves it off).
type BGPNeighborChange struct {
	At       time.Time
	Neighbor string
	Up       bool
	// Reason follows "Down", e.g. "BFD down received".
	Reason string
}

// e.g. 2026/12/05 07:42:33.123 BGP: [...] %ADJCHANGE: neighbor 198.51.100.2(vm) in vrf default Down BFD down received
var adjChange = regexp.MustCompile(`^(\S+ \S+) BGP: .*%ADJCHANGE: neighbor ([^( ]+)(?:\([^)]*\))? in vrf \S+ (Up|Down)\s*(.*)$`)

// BGPNeighborChanges returns the neighbor changes in bgpd's log so far,
// oldest first, with the millisecond times bgpd logged them at.
func (r *Router) BGPNeighborChanges(tb testing.TB) []BGPNeighborChange {
	tb.Helper()
	b, err := os.ReadFile(r.log("bgpd"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []BGPNeighborChange
	for _, line := range strings.Split(string(b), "\n") {
		m := adjChange.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000", m[1], time.Local)
		if err != nil {
			tb.Fatalf("bgpd log time %q: %v", m[1], err)
		}
		out = append(out, BGPNeighborChange{At: at, Neighbor: m[2], Up: m[3] == "Up", Reason: m[4]})
	}
	return out
}
