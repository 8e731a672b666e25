package membership

import (
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

var _ prometheus.Collector = (*collector)(nil)

// collector reads the membership when scraped, so nothing runs between
// scrapes and the numbers cannot drift from the view.
type collector struct {
	ml        *memberlist.Memberlist
	view      *view
	transport *transport
	fence     *fence
}

var (
	membersDesc = prometheus.NewDesc("steadylb_memberlist_members",
		`Members of the speakers' memberlist as this speaker sees them. state="alive" counts the live members `+
			`(this one included; a suspect member still counts until declared dead), state="gone" those that `+
			`left or were declared dead in the last 30s.`,
		[]string{"state"}, nil)
	eventsDesc = prometheus.NewDesc("steadylb_memberlist_member_events_total",
		`Membership changes seen by this speaker: event="join", "leave" (left or declared dead), "update", or `+
			`"refuted" (declared dead by memberlist and alive again before this speaker acted on it: a false alarm `+
			`that moved nothing).`,
		[]string{"event"}, nil)
	healthDesc = prometheus.NewDesc("steadylb_memberlist_health_score",
		"memberlist's view of this speaker's own health: 0 is healthy; n > 0 means it has been missing probes "+
			"itself, and it probes n+1 times slower so as not to accuse healthy peers.",
		nil, nil)
	packetsDesc = prometheus.NewDesc("steadylb_memberlist_packets_sent_total",
		"UDP packets sent by memberlist (probes, acks, gossip; not the TCP push/pull).", nil, nil)
	bytesDesc = prometheus.NewDesc("steadylb_memberlist_packet_sent_bytes_total",
		"UDP payload bytes sent by memberlist (probes, acks, gossip; not the TCP push/pull).", nil, nil)
	droppedDesc = prometheus.NewDesc("steadylb_memberlist_packets_dropped_total",
		"UDP packets received for memberlist and dropped because its handler was too far behind (its queue full); "+
			"declared-dead messages are never among them.", nil, nil)
	fenceDesc = prometheus.NewDesc("steadylb_memberlist_declared_dead_messages_total",
		`"Declared dead" messages received by this speaker: result="accepted" (it stopped answering and started over), `+
			`"stale" (about a life already acted on: the other copies of one declaration, or a previous process) or `+
			`"refused" (not from a member, not for this one, not sealed with the cluster key); `+
			`one from a member not known yet, acted on when it joins, counts as refused and as accepted.`,
		[]string{"result"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{membersDesc, eventsDesc, healthDesc, packetsDesc, bytesDesc, droppedDesc, fenceDesc} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	alive, gone := c.view.counts()
	ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(alive), "alive")
	ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(gone), "gone")
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(c.view.joins.Load()), "join")
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(c.view.leaves.Load()), "leave")
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(c.view.updates.Load()), "update")
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, float64(c.view.refuted.Load()), "refuted")
	ch <- prometheus.MustNewConstMetric(healthDesc, prometheus.GaugeValue, float64(c.ml.GetHealthScore()))
	ch <- prometheus.MustNewConstMetric(packetsDesc, prometheus.CounterValue, float64(c.transport.sent.Load()))
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.CounterValue, float64(c.transport.sentBytes.Load()))
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(c.transport.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(fenceDesc, prometheus.CounterValue, float64(c.fence.accepted.Load()), "accepted")
	ch <- prometheus.MustNewConstMetric(fenceDesc, prometheus.CounterValue, float64(c.fence.refused.Load()), "refused")
	ch <- prometheus.MustNewConstMetric(fenceDesc, prometheus.CounterValue, float64(c.fence.stale.Load()), "stale")
}
