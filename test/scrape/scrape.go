// Package scrape reads Prometheus metrics endpoints for the suites and the
// benchmarks: the controller's own and the API server's. It parses with
// the Prometheus library, so histograms, escaping and label order are read
// the way Prometheus reads them.
package scrape

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Samples are the samples of one scrape; a histogram is its _bucket, _sum
// and _count samples.
type Samples model.Vector

// Parse reads a Prometheus text exposition.
func Parse(r io.Reader) (Samples, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	vector, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, slices.Collect(maps.Values(families))...)
	if err != nil {
		return nil, fmt.Errorf("extract samples: %w", err)
	}
	return Samples(vector), nil
}

// Get scrapes the metrics endpoint at url.
func Get(url string) (Samples, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}

// Value sums the samples of the metric called name whose labels include
// every name/value pair of labels ("pool", "a", ...); ok is false when no
// sample matches.
func (s Samples) Value(name string, labels ...string) (v float64, ok bool) {
	if len(labels)%2 != 0 {
		panic(fmt.Sprintf("scrape: odd label list %q", labels))
	}
	for _, sample := range s {
		if string(sample.Metric[model.MetricNameLabel]) == name && hasLabels(sample.Metric, labels) {
			v += float64(sample.Value)
			ok = true
		}
	}
	return v, ok
}

// Sum is Value with a missing metric read as 0, as for a counter that has
// not counted yet.
func (s Samples) Sum(name string, labels ...string) float64 {
	v, _ := s.Value(name, labels...)
	return v
}

func hasLabels(m model.Metric, pairs []string) bool {
	for i := 0; i < len(pairs); i += 2 {
		if string(m[model.LabelName(pairs[i])]) != pairs[i+1] {
			return false
		}
	}
	return true
}

// Idle reports whether the named controller-runtime controllers have
// nothing queued and no reconcile running: with a watch event possibly on
// its way, callers look for it on a few scrapes in a row.
func (s Samples) Idle(controllers ...string) bool {
	for _, c := range controllers {
		depth, _ := s.Value("workqueue_depth", "name", c)
		active, _ := s.Value("controller_runtime_active_workers", "controller", c)
		if depth != 0 || active != 0 {
			return false
		}
	}
	return true
}

// WaitIdle polls the metrics endpoint at url every 50 ms until the
// controller-runtime controllers named (the controller's "service",
// "pools" and "reservations" by default) are Idle on three scrapes in a row, or until timeout.
func WaitIdle(ctx context.Context, url string, timeout time.Duration, controllers ...string) error {
	if len(controllers) == 0 {
		controllers = []string{"service", "pools", "reservations"}
	}
	streak := 0
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if m, err := Get(url); err == nil && m.Idle(controllers...) {
			streak++
		} else {
			streak = 0
		}
		return streak >= 3, nil
	})
}
