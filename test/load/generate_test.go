package load

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestGenerate: against a server on the loopback, answers are decoded and
// counted, a server that stops answering turns requests into failures,
// and every request sent is reported exactly once.
func TestGenerate(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(Answer{Pod: "web-1", Node: "node-1", Client: r.RemoteAddr})
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var results []Result
	var answered, failed atomic.Int64
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- Generate(ctx, Options{URL: srv.URL, Rate: 200, Timeout: 500 * time.Millisecond}, func(r Result) {
			results = append(results, r)
			if r.OK() {
				answered.Add(1)
			} else {
				failed.Add(1)
			}
		})
	}()
	waitUntil(t, "20 answers", func() bool { return answered.Load() >= 20 })
	down.Store(true)
	waitUntil(t, "20 failures", func() bool { return failed.Load() >= 20 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rep := Summarize(results, start, time.Now())
	if rep.Sent != len(results) || rep.Failed < 20 || rep.Sent-rep.Failed < 20 {
		t.Fatalf("report %v from %d results", rep, len(results))
	}
	if rep.Errors["status 503 Service Unavailable"] != rep.Failed {
		t.Errorf("errors %v, want every failure a 503", rep.Errors)
	}
	host, _, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if rep.ByNode["node-1"] != rep.Sent-rep.Failed || rep.Sources[host] != rep.Sent-rep.Failed {
		t.Errorf("answers by node %v, sources %v; want all %d from node-1 and %s", rep.ByNode, rep.Sources, rep.Sent-rep.Failed, host)
	}
}

// TestGenerateRefused: a port nobody listens on fails fast as refused.
func TestGenerateRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	var results []Result
	if err := Generate(ctx, Options{URL: url, Rate: 100}, func(r Result) { results = append(results, r) }); err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no request sent")
	}
	for _, r := range results {
		if r.Err != "connection refused" {
			t.Fatalf("result %+v, want connection refused", r)
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
