package layer2

import (
	"errors"
	"net/netip"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are MetalLB's layer-2 counters, one series per announced address.
type metrics struct {
	requests   *prometheus.CounterVec
	responses  *prometheus.CounterVec
	gratuitous *prometheus.CounterVec
}

// addrMetrics are one address's series, looked up once when the address
// enters the set so that answering a request formats no label.
type addrMetrics struct {
	requests   prometheus.Counter
	responses  prometheus.Counter
	gratuitous prometheus.Counter
}

func newMetrics(log logr.Logger, reg prometheus.Registerer) *metrics {
	vec := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "metallb",
			Subsystem: "layer2",
			Name:      name,
			Help:      help,
		}, []string{"ip"})
		if reg == nil {
			return v
		}
		if err := reg.Register(v); err != nil {
			// A second Announcer on the same registry shares the first
			// one's series rather than losing its counts.
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
					return existing
				}
			}
			log.Error(err, "layer-2 metric not registered", "metric", name)
		}
		return v
	}
	return &metrics{
		requests:   vec("requests_received", "Number of ARP requests and NDP neighbor solicitations received for an announced address."),
		responses:  vec("responses_sent", "Number of ARP replies and NDP neighbor advertisements sent in answer to a request for an address."),
		gratuitous: vec("gratuitous_sent", "Number of gratuitous ARP and unsolicited NDP neighbor advertisement frames sent for an address."),
	}
}

func (m *metrics) forAddr(addr netip.Addr) *addrMetrics {
	ip := addr.String()
	return &addrMetrics{
		requests:   m.requests.WithLabelValues(ip),
		responses:  m.responses.WithLabelValues(ip),
		gratuitous: m.gratuitous.WithLabelValues(ip),
	}
}

// forget deletes addr's series once it has left the set.
func (m *metrics) forget(addr netip.Addr) {
	ip := addr.String()
	m.requests.DeleteLabelValues(ip)
	m.responses.DeleteLabelValues(ip)
	m.gratuitous.DeleteLabelValues(ip)
}
