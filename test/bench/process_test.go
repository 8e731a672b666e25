package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

// process is one run of the controller binary.
type process struct {
	*proc.Process
	probe, metrics string
	// ready is closed once /readyz first answered 200, at readyAt.
	ready   chan struct{}
	readyAt time.Time
}

// startController starts the controller and, in the background, notes when
// /readyz first answers 200. Logging is at error level so that writing
// logs does not become part of what is measured.
func startController(b *testing.B, cl *cleanups, env *testenv.Env) *process {
	b.Helper()
	p := &process{probe: proc.FreeAddr(b), metrics: proc.FreeAddr(b), ready: make(chan struct{})}
	p.Process = proc.Start(b, binary, "--kubeconfig", env.Kubeconfig, "--namespace", testenv.Namespace,
		"--metrics-bind-address", p.metrics, "--health-probe-bind-address", p.probe, "--log-level", "error")
	cl.add(func() {
		p.Kill()
		if b.Failed() {
			b.Logf("controller output:\n%s", p.Output())
		}
	})
	go p.pollReady()
	return p
}

// pollReady polls often (20 ms) because its answer is a measured time.
func (p *process) pollReady() {
	url := "http://" + p.probe + "/readyz"
	for {
		select {
		case <-p.Done:
			return
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.readyAt = time.Now()
				close(p.ready)
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady returns how long after process start /readyz first answered.
func (p *process) waitReady(b *testing.B) time.Duration {
	b.Helper()
	select {
	case <-p.ready:
	case <-p.Done:
		b.Fatalf("controller exited before it was ready (%v):\n%s", p.Exited(), p.Output())
	case <-time.After(waitLimit):
		b.Fatalf("controller not ready after %v", waitLimit)
	}
	return p.readyAt.Sub(p.Started)
}

// waitSettled waits until the controller is ready and has worked off every
// queued reconcile: both controllers' work queues empty and idle for three
// polls in a row (a watch event may be on its way), and the Service queue
// has had at least n adds (the informer's initial list). It returns when
// that was first seen, relative to process start.
func (p *process) waitSettled(b *testing.B, n int) time.Duration {
	b.Helper()
	p.waitReady(b)
	deadline := time.Now().Add(waitLimit)
	var streak int
	var since time.Time
	for time.Now().Before(deadline) {
		select {
		case <-p.Done:
			b.Fatalf("controller exited (%v):\n%s", p.Exited(), p.Output())
		default:
		}
		now := time.Now()
		m, err := p.scrape()
		if err == nil && m.Sum("workqueue_adds_total", "name", "service") >= float64(n) && m.Idle("service", "pools", "reservations") {
			if streak == 0 {
				since = now
			}
			if streak++; streak == 3 {
				return since.Sub(p.Started)
			}
		} else {
			streak = 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("controller not settled after %v", waitLimit)
	return 0
}

func (p *process) scrape() (scrape.Samples, error) {
	return scrape.Get("http://" + p.metrics + "/metrics")
}

func (p *process) mustScrape(b *testing.B) scrape.Samples {
	b.Helper()
	m, err := p.scrape()
	if err != nil {
		b.Fatalf("scrape controller metrics: %v", err)
	}
	return m
}

// peakRSS reads the process's peak resident set (VmHWM) in MB, 10^6 bytes.
func (p *process) peakRSS(b *testing.B) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		b.Fatalf("read controller status: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatalf("parse %q: %v", line, err)
			}
			return kb * 1024 / 1e6
		}
	}
	b.Fatalf("no VmHWM in /proc/%d/status", p.Pid())
	return 0
}

// apiRequests scrapes the API server's request counters, keyed by verb,
// resource and subresource: the difference across a phase shows which
// calls the controller made, and how many.
func apiRequests(b *testing.B, env *testenv.Env) map[string]float64 {
	b.Helper()
	cs := newClientset(b, env)
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("scrape API server metrics: %v", err)
	}
	samples, err := scrape.Parse(bytes.NewReader(raw))
	if err != nil {
		b.Fatalf("API server metrics: %v", err)
	}
	out := map[string]float64{}
	for _, s := range samples {
		labels := s.Metric
		if labels[model.MetricNameLabel] != "apiserver_request_total" {
			continue
		}
		k := string(labels["verb"] + " " + labels["resource"])
		if labels["subresource"] != "" {
			k += "/" + string(labels["subresource"])
		}
		if code := string(labels["code"]); !strings.HasPrefix(code, "2") {
			k += " (" + code + ")"
		}
		out[k] += float64(s.Value)
	}
	return out
}
