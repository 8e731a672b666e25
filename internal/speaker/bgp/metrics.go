package bgp

import (
	"context"
	"slices"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/prometheus/client_golang/prometheus"
)

// MetalLB's BGP metrics, labelled as its FRR mode labels them: peer is
// the router's "address:port", vrf is always "default".
var (
	labels        = []string{"peer", "vrf"}
	sessionUpDesc = prometheus.NewDesc("metallb_bgp_session_up",
		"BGP session state (1 is up, 0 is down)", labels, nil)
	updatesDesc = prometheus.NewDesc("metallb_bgp_updates_total",
		"Number of BGP UPDATE messages sent", labels, nil)
	announcedDesc = prometheus.NewDesc("metallb_bgp_announced_prefixes_total",
		"Number of prefixes currently being advertised on the BGP session", labels, nil)
	pendingDesc = prometheus.NewDesc("metallb_bgp_pending_prefixes_total",
		"Number of prefixes that should be advertised on the BGP session", labels, nil)
	// Ours: 1 while a step of a session to the peer fails and is retried.
	retryingDesc = prometheus.NewDesc("steadylb_bgp_session_retrying",
		"1 while a step of the BGP session failed and is being retried: step \"routes\" (advertising, connecting), \"bfd\" (adding the BFD session) or \"vrf\" (its VRF device missing)",
		append(slices.Clone(labels), "step"), nil)
)

// steps are the values of steadylb_bgp_session_retrying's step label, by
// the field a Fault names.
var steps = map[string]string{fieldRoutes: "routes", fieldBFD: "bfd", fieldVRF: "vrf"}

// collector reads the metrics from GoBGP's own counters at scrape time,
// so an Update costs nothing more for them.
type collector struct{ s *Sessions }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionUpDesc
	ch <- updatesDesc
	ch <- announcedDesc
	ch <- pendingDesc
	ch <- retryingDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	seen := map[[2]string]bool{}
	retrying := map[[2]string]map[string]bool{}
	for _, r := range c.s.sessions {
		key := [2]string{r.cfg.peerLabel(), r.cfg.vrfLabel()}
		peer, vrf := key[0], key[1]
		if retrying[key] == nil {
			retrying[key] = map[string]bool{}
		}
		for field := range r.faults {
			retrying[key][steps[field]] = true
		}
		if seen[key] {
			continue // two sessions to one router: the metrics cannot tell them apart
		}
		seen[key] = true
		st := r.stats(ctx)
		up, announced := 0.0, float64(st.advertised)
		if r.isUp() {
			up = 1
		}
		pending := float64(r.sendable()) - announced
		ch <- prometheus.MustNewConstMetric(sessionUpDesc, prometheus.GaugeValue, up, peer, vrf)
		ch <- prometheus.MustNewConstMetric(updatesDesc, prometheus.CounterValue, float64(r.updates.observe(st.updates)), peer, vrf)
		ch <- prometheus.MustNewConstMetric(announcedDesc, prometheus.GaugeValue, announced, peer, vrf)
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, max(pending, 0), peer, vrf)
	}
	for key, failing := range retrying {
		for _, step := range steps {
			v := 0.0
			if failing[step] {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(retryingDesc, prometheus.GaugeValue, v, key[0], key[1], step)
		}
	}
}

// peerStats is what GoBGP counts of the neighbor.
type peerStats struct {
	updates    uint64 // UPDATE messages sent
	advertised uint64 // prefixes sent, all families
}

func (r *runner) stats(ctx context.Context) peerStats {
	var st peerStats
	if !r.connected {
		return st
	}
	err := r.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
		st.updates = p.GetState().GetMessages().GetSent().GetUpdate()
		for _, a := range p.GetAfiSafis() {
			st.advertised += a.GetState().GetAdvertised()
		}
	})
	if err != nil {
		r.log.Error(err, "read the session's counters")
	}
	return st
}

func (r *runner) sentUpdates(ctx context.Context) uint64 { return r.stats(ctx).updates }

// sendable counts the routes of the families the session carries.
func (r *runner) sendable() int {
	n := 0
	for p := range r.routes {
		if r.cfg.carries(p) {
			n++
		}
	}
	return n
}

// counter keeps a total across the resets of the counter it follows
// (GoBGP's count starts over with each server).
// Sessions.mu guards it.
type counter struct{ base, last uint64 }

func (c *counter) observe(v uint64) uint64 {
	if v < c.last {
		c.base += c.last
	}
	c.last = v
	return c.base + c.last
}
