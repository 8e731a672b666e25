package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

// profileEnv, when set to a path prefix, makes a run write PREFIX.cpu (a
// CPU profile), PREFIX.trace (an execution trace, for go tool trace) and
// PREFIX.timeline: when each request and each phase of the run started
// and ended. It is how BENCHMARKS.md finds where the time over the
// Service LIST goes; users have no use for it, so it is not a flag.
const profileEnv = "KUBECTL_STEADYLB_PROFILE"

// profiler records a run's timeline. A nil profiler records nothing, so
// the code it times calls it unconditionally.
type profiler struct {
	prefix string
	start  time.Time
	cpu    *os.File
	trace  *os.File

	mu    sync.Mutex
	spans []span
}

type span struct {
	what       string
	begin, end time.Duration
	// first is when a response's headers came; zero for a phase.
	first time.Duration
	bytes int64
}

// startProfile starts profiling when the environment asks for it.
func startProfile() (*profiler, error) {
	prefix := os.Getenv(profileEnv)
	if prefix == "" {
		return nil, nil
	}
	p := &profiler{prefix: prefix, start: time.Now()}
	var err error
	if p.cpu, err = os.Create(prefix + ".cpu"); err != nil {
		return nil, fmt.Errorf("%s: %w", profileEnv, err)
	}
	if p.trace, err = os.Create(prefix + ".trace"); err != nil {
		return nil, fmt.Errorf("%s: %w", profileEnv, err)
	}
	if err := pprof.StartCPUProfile(p.cpu); err != nil {
		return nil, fmt.Errorf("%s: start CPU profile: %w", profileEnv, err)
	}
	if err := trace.Start(p.trace); err != nil {
		return nil, fmt.Errorf("%s: start trace: %w", profileEnv, err)
	}
	return p, nil
}

// phase times fn as one phase of the run.
func (p *profiler) phase(what string, fn func()) {
	if p == nil {
		fn()
		return
	}
	begin := time.Since(p.start)
	trace.WithRegion(context.Background(), what, fn)
	p.add(span{what: what, begin: begin, end: time.Since(p.start)})
}

func (p *profiler) add(s span) {
	p.mu.Lock()
	p.spans = append(p.spans, s)
	p.mu.Unlock()
}

// wrap times every request the client makes, from its start to the last
// byte of its body.
func (p *profiler) wrap(rt http.RoundTripper) http.RoundTripper {
	if p == nil {
		return rt
	}
	return timedTransport{p: p, next: rt}
}

type timedTransport struct {
	p    *profiler
	next http.RoundTripper
}

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := &span{what: req.Method + " " + req.URL.RequestURI(), begin: time.Since(t.p.start)}
	resp, err := t.next.RoundTrip(req)
	s.first = time.Since(t.p.start)
	if err != nil {
		s.end = s.first
		t.p.add(*s)
		return nil, err
	}
	s.what += fmt.Sprintf(" %d (%s%s)", resp.StatusCode, resp.Header.Get("Content-Type"), encoding(resp))
	resp.Body = &timedBody{ReadCloser: resp.Body, p: t.p, s: s}
	return resp, nil
}

// encoding says whether the body came compressed: the transport
// decompresses it and takes the header away.
func encoding(resp *http.Response) string {
	if resp.Uncompressed {
		return ", gzip"
	}
	return ""
}

// timedBody ends its request's span at the end of the body.
type timedBody struct {
	io.ReadCloser
	p    *profiler
	s    *span
	once sync.Once
}

func (b *timedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.s.bytes += int64(n)
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.done()
	return b.ReadCloser.Close()
}

func (b *timedBody) done() {
	b.once.Do(func() {
		b.s.end = time.Since(b.p.start)
		b.p.add(*b.s)
	})
}

// stop ends the profiles and writes the timeline, in milliseconds since
// main started; its first line is main's start in Unix nanoseconds, for a
// caller that timed the process from outside.
func (p *profiler) stop() error {
	if p == nil {
		return nil
	}
	trace.Stop()
	pprof.StopCPUProfile()
	f, err := os.Create(p.prefix + ".timeline")
	if err != nil {
		return fmt.Errorf("%s: %w", profileEnv, err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "main %d\n", p.start.UnixNano())
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, s := range p.spans {
		fmt.Fprintf(w, "%8.1f %8.1f %8.1f %10d %s\n", ms(s.begin), ms(s.first), ms(s.end), s.bytes, s.what)
	}
	fmt.Fprintf(w, "%8.1f %8.1f %8.1f %10d exit\n", ms(time.Since(p.start)), 0.0, 0.0, 0)
	return errors.Join(w.Flush(), f.Close(), p.cpu.Close(), p.trace.Close())
}
