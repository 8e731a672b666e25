package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
)

// Traffic is a test/loadgen process sending requests from a network
// namespace, and the results it has written so far.
type Traffic struct {
	proc *proc.Process
	path string

	mu      sync.Mutex
	offset  int64
	partial []byte
	results []Result
}

// Start runs the loadgen binary in ns with opts until Stop or the end of
// tb.
func Start(tb testing.TB, binary string, ns *netns.NS, opts Options) *Traffic {
	tb.Helper()
	opts = opts.withDefaults()
	path := filepath.Join(tb.TempDir(), "results.jsonl")
	p := proc.Start(tb, "ip", "netns", "exec", ns.Name, binary, "--out", path, "--url", opts.URL,
		"--rate", strconv.Itoa(opts.Rate), "--timeout", opts.Timeout.String())
	return &Traffic{proc: p, path: path}
}

// Results returns every result written so far, in the order they ended.
func (t *Traffic) Results() ([]Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readNew(); err != nil {
		return nil, err
	}
	return append([]Result(nil), t.results...), nil
}

// readNew reads the lines appended since the last call.
func (t *Traffic) readNew() error {
	f, err := os.Open(t.path)
	if os.IsNotExist(err) {
		return nil // nothing written yet
	}
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	t.offset += int64(len(data))
	data = append(t.partial, data...)
	// The last line may be half written: keep it for the next read.
	end := bytes.LastIndexByte(data, '\n') + 1
	t.partial = append([]byte(nil), data[end:]...)
	sc := bufio.NewScanner(bytes.NewReader(data[:end]))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("load: result %q: %w", sc.Text(), err)
		}
		t.results = append(t.results, r)
	}
	return sc.Err()
}

// Await waits until cond holds for the results so far, polling, or fails
// when the generator exits or ctx ends.
func (t *Traffic) Await(ctx context.Context, what string, cond func([]Result) bool) error {
	for {
		res, err := t.Results()
		if err != nil {
			return err
		}
		if cond(res) {
			return nil
		}
		select {
		case <-t.proc.Done:
			return fmt.Errorf("load: the generator exited while waiting for %s: %v\n%s", what, t.proc.Exited(), t.proc.Output())
		case <-ctx.Done():
			return fmt.Errorf("load: waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop ends the load (the requests in flight finish) and returns every
// result and their Report, from the first request sent to the last ended.
func (t *Traffic) Stop() ([]Result, Report, error) {
	// ip netns exec replaced itself with the generator: the PID is its.
	if err := syscall.Kill(t.proc.Pid(), syscall.SIGTERM); err != nil {
		return nil, Report{}, fmt.Errorf("load: stop the generator: %w", err)
	}
	<-t.proc.Done
	if err := t.proc.Exited(); err != nil {
		return nil, Report{}, fmt.Errorf("load: the generator failed: %w\n%s", err, t.proc.Output())
	}
	res, err := t.Results()
	if err != nil {
		return nil, Report{}, err
	}
	if len(res) == 0 {
		return nil, Report{}, fmt.Errorf("load: no request was sent\n%s", t.proc.Output())
	}
	start, end := res[0].Sent, res[0].Done()
	for _, r := range res {
		if r.Sent.Before(start) {
			start = r.Sent
		}
		if r.Done().After(end) {
			end = r.Done()
		}
	}
	return res, Summarize(res, start, end), nil
}

// Tally counts the trailing results for which ok holds, stopping at the
// first one, from the last ended backwards: how long a condition has held.
func Tally(results []Result, ok func(Result) bool) int {
	n := 0
	for i := len(results) - 1; i >= 0 && ok(results[i]); i-- {
		n++
	}
	return n
}
