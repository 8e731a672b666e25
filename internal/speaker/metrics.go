package speaker

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The protocol label and the word in events, MetalLB's.
const (
	protocolLayer2 = "layer2"
	protocolBGP    = "bgp"
)

// metrics are one speaker's metrics, MetalLB's names. They live on the
// speaker rather than in globals so that several speakers in one process
// (tests) keep apart.
type metrics struct {
	node         string
	announced    *prometheus.GaugeVec
	configLoaded prometheus.Gauge
	configStale  prometheus.Gauge
	// decided counts addresses decided: one change to one Service adds
	// its own addresses, not the cluster's (invariant 10).
	decided prometheus.Counter
	// invalid mirrors the ConfigurationState's verdict, for alerts.
	invalid prometheus.Gauge
	// fences counts the times this speaker stopped answering everything
	// and started its grace over (declared dead, a link back, a stall).
	fences prometheus.Counter
	// graceEnd is when the start grace ends, in Unix nanoseconds:
	// math.MaxInt64 while the speaker looks for the others, for
	// steadylb_speaker_start_grace.
	graceEnd atomic.Int64
}

func newMetrics(reg prometheus.Registerer, node string) (*metrics, error) {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m := &metrics{
		node: node,
		announced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metallb_speaker_announced",
			Help: "1 for each address this node announces for a Service, by protocol",
		}, []string{"service", "protocol", "node", "ip"}),
		configLoaded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metallb_k8s_client_config_loaded_bool",
			Help: "1 if the configuration was loaded at least once",
		}),
		configStale: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metallb_k8s_client_config_stale_bool",
			Help: "1 if running on a stale configuration because the latest one is invalid",
		}),
		decided: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "steadylb_speaker_addresses_decided_total",
			Help: "Addresses whose owner this speaker computed; a change to one Service adds only the addresses it touches",
		}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "steadylb_configuration_invalid",
			Help: "1 while the ConfigurationState this component writes says Invalid (its errorSummary says why), else 0",
		}),
		fences: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "steadylb_speaker_fences_total",
			Help: "Times this speaker stopped answering every address and started its grace over: declared dead, a link's carrier back, or the process stalled",
		}),
	}
	m.graceEnd.Store(math.MaxInt64)
	// Read at each scrape: the grace ends by the clock, not in a round.
	inGrace := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "steadylb_speaker_start_grace",
		Help: "1 while this speaker holds its layer-2 answers back because it started or started over (finding the other speakers, then the start grace), else 0",
	}, func() float64 {
		if time.Now().UnixNano() < m.graceEnd.Load() {
			return 1
		}
		return 0
	})
	var errs []error
	for _, c := range []prometheus.Collector{m.announced, m.configLoaded, m.configStale, m.decided, m.invalid, m.fences, inGrace} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register speaker metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) announce(svc types.NamespacedName, protocol string, addrs []netip.Addr) {
	for _, a := range addrs {
		m.announced.WithLabelValues(svc.String(), protocol, m.node, a.String()).Set(1)
	}
}

func (m *metrics) withdraw(svc types.NamespacedName, protocol string, addrs []netip.Addr) {
	for _, a := range addrs {
		m.announced.DeleteLabelValues(svc.String(), protocol, m.node, a.String())
	}
}

func (m *metrics) configuration(valid bool) {
	if valid {
		m.configLoaded.Set(1)
		m.configStale.Set(0)
		return
	}
	m.configStale.Set(1)
}

// boolGauge is a gauge's value for a condition: 1 or 0.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
