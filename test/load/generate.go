package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Answer is a backend's answer (test/backend): who served the request and
// the source address it saw.
type Answer struct {
	Pod    string `json:"pod"`
	Node   string `json:"node"`
	Client string `json:"client"`
}

// Result is one request.
type Result struct {
	// Sent is when the request was started, Took how long it lasted.
	Sent time.Time     `json:"sent"`
	Took time.Duration `json:"took"`
	// Err says why it failed; empty when it got a 200 with an answer.
	Err    string `json:"err,omitempty"`
	Answer Answer `json:"answer"`
	// Stalled is, on the first request after the generator itself was
	// not scheduled on time, how late it was: a gap in the answers that
	// long says more about the machine than about the path.
	Stalled time.Duration `json:"stalled,omitempty"`
}

// OK reports whether the request succeeded.
func (r Result) OK() bool { return r.Err == "" }

// Done is when the request ended.
func (r Result) Done() time.Time { return r.Sent.Add(r.Took) }

// Options configure Generate.
type Options struct {
	// URL is fetched by every request.
	URL string
	// Rate is requests per second; default 300.
	Rate int
	// Timeout bounds each request, connection included; default 1s.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Rate == 0 {
		o.Rate = 300
	}
	if o.Timeout == 0 {
		o.Timeout = time.Second
	}
	return o
}

// Generate sends requests at opts.Rate until ctx ends, then waits for
// those in flight, calling emit once per request (from one goroutine at a
// time). A request that cannot be sent on time because too many are in
// flight is counted as failed, not delayed: a load that slows down when
// the service does would hide the outage it is meant to measure.
func Generate(ctx context.Context, opts Options, emit func(Result)) error {
	opts = opts.withDefaults()
	if opts.URL == "" || opts.Rate < 0 || opts.Timeout < 0 {
		return fmt.Errorf("load: bad options %+v", opts)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:       (&net.Dialer{}).DialContext,
		DisableKeepAlives: true,
	}}
	// Enough room for every request of two timeouts' worth.
	slots := make(chan struct{}, max(1, 2*opts.Rate*int(opts.Timeout/time.Millisecond)/1000))
	var mu sync.Mutex
	report := func(r Result) {
		mu.Lock()
		defer mu.Unlock()
		emit(r)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	interval := time.Second / time.Duration(opts.Rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// A tick much later than the interval: this process was not
		// running (the ticker drops the ticks it missed).
		now := time.Now()
		var stalled time.Duration
		if late := now.Sub(last) - interval; late > stallThreshold {
			stalled = late
		}
		last = now
		select {
		case slots <- struct{}{}:
		default:
			report(Result{Sent: now, Err: "too many requests in flight", Stalled: stalled})
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r := fetch(client, opts)
			r.Stalled = stalled
			report(r)
		})
	}
}

// stallThreshold is how late a tick must be to count as a stall of the
// generator.
const stallThreshold = 50 * time.Millisecond

// fetch makes one request. It does not use the caller's context: the
// requests in flight when the load stops are still measured.
func fetch(client *http.Client, opts Options) Result {
	r := Result{Sent: time.Now()}
	ctx, cancel := context.WithDeadline(context.Background(), r.Sent.Add(opts.Timeout))
	defer cancel()
	defer func() { r.Took = time.Since(r.Sent) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opts.URL, nil)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	resp, err := client.Do(req)
	if err != nil {
		r.Err = classify(err)
		r.Took = time.Since(r.Sent)
		return r
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		r.Err = classify(err)
	case resp.StatusCode != http.StatusOK:
		r.Err = "status " + resp.Status
	default:
		if err := json.Unmarshal(body, &r.Answer); err != nil {
			r.Err = "bad answer: " + err.Error()
		}
	}
	r.Took = time.Since(r.Sent)
	return r
}

// The kinds of failure Report.Errors counts, besides "status <code>" and
// the errors that fit none of them.
const (
	ErrTimeout = "timeout"
	ErrRefused = "connection refused"
	ErrReset   = "connection reset"
	ErrNoRoute = "no route to host"
)

// classify names the failure in words that group well in a report.
func classify(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, syscall.ECONNRESET):
		return ErrReset
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return ErrNoRoute
	}
	return err.Error()
}
