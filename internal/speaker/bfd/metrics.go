package bfd

import (
	"errors"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are MetalLB's BFD series (labels peer and vrf), plus a counter
// of discarded packets by reason.
type metrics struct {
	up         *prometheus.GaugeVec
	input      *prometheus.CounterVec
	output     *prometheus.CounterVec
	upEvents   *prometheus.CounterVec
	downEvents *prometheus.CounterVec
	discarded  *prometheus.CounterVec
	// users counts the sessions sharing a peer and vrf label, so the
	// series go only with the last one.
	users map[[2]string]int
}

// peerMetrics are one session's series, looked up once.
type peerMetrics struct {
	labels                             [2]string // peer, vrf
	up                                 prometheus.Gauge
	input, output, upEvents, downEvent prometheus.Counter
}

// Reasons a received packet is discarded, the values of the "reason"
// label.
const (
	discardTTL       = "ttl"
	discardMalformed = "malformed"
	discardAuth      = "authentication"
	discardNoSession = "no_session"
)

func newMetrics(log logr.Logger, reg prometheus.Registerer) *metrics {
	m := &metrics{users: map[[2]string]int{}}
	peer := []string{"peer", "vrf"}
	m.up = register(log, reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "metallb", Subsystem: "bfd", Name: "session_up",
		Help: "1 while the BFD session with the peer is Up, else 0.",
	}, peer))
	counter := func(name, help string) *prometheus.CounterVec {
		return register(log, reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "metallb", Subsystem: "bfd", Name: name, Help: help,
		}, peer))
	}
	m.input = counter("control_packet_input", "BFD control packets received and accepted for the session.")
	m.output = counter("control_packet_output", "BFD control packets sent for the session.")
	m.upEvents = counter("session_up_events", "Times the BFD session came Up.")
	m.downEvents = counter("session_down_events", "Times the BFD session left Up.")
	m.discarded = register(log, reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "steadylb", Subsystem: "bfd", Name: "control_packets_discarded_total",
		Help: "BFD control packets discarded before reaching a session, by reason.",
	}, []string{"reason"}))
	return m
}

// register adds c to reg, or returns the collector already there under
// the same name, so several Managers on one registry share their series.
func register[C prometheus.Collector](log logr.Logger, reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		log.Error(err, "BFD metric not registered")
	}
	return c
}

// forPeer returns a session's series, labelled as MetalLB's FRR exporter
// labels them: peer (the remote address) and vrf ("default" outside a
// VRF).
func (m *metrics) forPeer(k Key) peerMetrics {
	l := [2]string{k.peerLabel(), k.vrfLabel()}
	m.users[l]++
	pm := peerMetrics{
		labels:    l,
		up:        m.up.WithLabelValues(l[:]...),
		input:     m.input.WithLabelValues(l[:]...),
		output:    m.output.WithLabelValues(l[:]...),
		upEvents:  m.upEvents.WithLabelValues(l[:]...),
		downEvent: m.downEvents.WithLabelValues(l[:]...),
	}
	return pm
}

// forget drops a removed session's series, once no other session uses
// its label.
func (m *metrics) forget(pm peerMetrics) {
	if m.users[pm.labels]--; m.users[pm.labels] > 0 {
		return
	}
	delete(m.users, pm.labels)
	for _, v := range []interface{ DeleteLabelValues(...string) bool }{m.up, m.input, m.output, m.upEvents, m.downEvents} {
		v.DeleteLabelValues(pm.labels[:]...)
	}
}
