package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadylb/steadylb/internal/ipam"
)

// Metric names users' MetalLB dashboards already use, plus steadylb's own.
var (
	addressesTotal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metallb_allocator_addresses_total",
		Help: "Number of usable IP addresses, per pool",
	}, []string{"pool"})
	addressesInUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metallb_allocator_addresses_in_use_total",
		Help: "Number of IP addresses in use, per pool",
	}, []string{"pool"})
	ipv4Total = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metallb_allocator_ipv4_addresses_total",
		Help: "Number of usable IPv4 addresses, per pool",
	}, []string{"pool"})
	ipv4InUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metallb_allocator_ipv4_addresses_in_use_total",
		Help: "Number of IPv4 addresses in use, per pool",
	}, []string{"pool"})
	ipv6Total = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metallb_allocator_ipv6_addresses_total",
		Help: "Number of usable IPv6 addresses, per pool (saturated at float64 precision)",
	}, []string{"pool"})
	ipv6InUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metallb_allocator_ipv6_addresses_in_use_total",
		Help: "Number of IPv6 addresses in use, per pool",
	}, []string{"pool"})
	configLoaded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metallb_k8s_client_config_loaded_bool",
		Help: "1 if the pool configuration was loaded at least once",
	})
	configStale = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metallb_k8s_client_config_stale_bool",
		Help: "1 if running on a stale configuration because the latest one is invalid",
	})
	configInvalid = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "steadylb_configuration_invalid",
		Help: "1 while the ConfigurationState this component writes says Invalid (its errorSummary says why), else 0",
	})
	addressesReserved = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steadylb_allocator_addresses_reserved",
		Help: "IP addresses kept for a Service name by AddressReservations, retained ones included, per pool; counted as in use too",
	}, []string{"pool"})
	servicesWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "steadylb_service_status_writes_total",
		Help: "Service status writes made by the controller",
	})
	addressesMoved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "steadylb_addresses_moved_total",
		Help: "Status writes that replaced addresses a Service already showed; outside user changes this stays 0",
	})
	// Time spent waiting in the work queue before that is controller-runtime's
	// workqueue_queue_duration_seconds{name="service"}.
	allocationDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "steadylb_allocation_duration_seconds",
		Help:    "Time from taking a Service off the work queue to the API server accepting its new addresses",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1 ms to 16 s
	})
)

var registerOnce sync.Once

// registerMetrics adds the controller's metrics to controller-runtime's
// registry. It runs from Setup rather than init, so a process that only
// imports this package (the kubectl plugin, through internal/inspect)
// registers none of the controller's metrics.
func registerMetrics() {
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(addressesTotal, addressesInUse, ipv4Total, ipv4InUse, ipv6Total, ipv6InUse,
			configLoaded, configStale, configInvalid, servicesWritten, addressesReserved, addressesMoved, allocationDuration)
	})
}

// published names the pools that have metric series, so the series of a
// deleted pool go with it. Only the pool reconciler (one worker) publishes.
var published = struct {
	sync.Mutex
	pools map[string]bool
}{pools: map[string]bool{}}

var poolGauges = []*prometheus.GaugeVec{addressesTotal, addressesInUse, ipv4Total, ipv4InUse, ipv6Total, ipv6InUse,
	addressesReserved}

// publishStats sets the per-pool gauges from the book's counters and drops
// the series of pools that no longer exist.
func publishStats(stats []ipam.Stats, reserved map[string]int) {
	published.Lock()
	defer published.Unlock()
	current := map[string]bool{}
	for _, s := range stats {
		current[s.Pool] = true
		v4t, v4u := s.IPv4.Total.Float64(), s.IPv4.Assigned.Float64()
		v6t, v6u := s.IPv6.Total.Float64(), s.IPv6.Assigned.Float64()
		ipv4Total.WithLabelValues(s.Pool).Set(v4t)
		ipv4InUse.WithLabelValues(s.Pool).Set(v4u)
		ipv6Total.WithLabelValues(s.Pool).Set(v6t)
		ipv6InUse.WithLabelValues(s.Pool).Set(v6u)
		addressesTotal.WithLabelValues(s.Pool).Set(v4t + v6t)
		addressesInUse.WithLabelValues(s.Pool).Set(v4u + v6u)
		addressesReserved.WithLabelValues(s.Pool).Set(float64(reserved[s.Pool]))
	}
	for pool := range published.pools {
		if !current[pool] {
			for _, g := range poolGauges {
				g.DeleteLabelValues(pool)
			}
		}
	}
	published.pools = current
}
