package membership

import (
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// logQueueLen bounds the lines waiting for the log output.
const logQueueLen = 1024

// lateAfter is how long a line may wait in the queue before it says when
// it was logged (the output's own timestamp is when it was written).
const lateAfter = 10 * time.Millisecond

// asyncLog writes the membership's log lines from a goroutine of its own.
// memberlist logs while it holds its state lock, and so does the view
// (memberlist's event callbacks run under it): a log output that does not
// keep up, such as a full pipe to a starved container runtime, would stop
// the failure detection and the fence with it. A line that finds the
// queue full is dropped, and the next line written says how many were.
type asyncLog struct {
	lines   chan func()
	dropped atomic.Uint64
	report  logr.Logger // writes directly, for the count of dropped lines
	stopped chan struct{}
	done    chan struct{}
}

func newAsyncLog(report logr.Logger) *asyncLog {
	q := &asyncLog{lines: make(chan func(), logQueueLen), report: report,
		stopped: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// wrap returns l writing through the queue.
func (q *asyncLog) wrap(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(asyncSink{LogSink: l.GetSink(), q: q})
}

func (q *asyncLog) put(line func()) {
	select {
	case q.lines <- line:
	default:
		q.dropped.Add(1)
	}
}

func (q *asyncLog) run() {
	defer close(q.done)
	for {
		select {
		case line := <-q.lines:
			q.write(line)
		case <-q.stopped:
			for {
				select {
				case line := <-q.lines:
					q.write(line)
				default:
					return
				}
			}
		}
	}
}

func (q *asyncLog) write(line func()) {
	line()
	if n := q.dropped.Swap(0); n > 0 {
		q.report.Info("dropped membership log lines: the log output did not keep up", "dropped", n)
	}
}

// stop writes what is queued and ends the goroutine, waiting at most
// wait for an output that does not keep up. Lines logged after it are
// dropped.
func (q *asyncLog) stop(wait time.Duration) {
	select {
	case <-q.stopped:
		return
	default:
	}
	close(q.stopped)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-q.done:
	case <-t.C:
	}
}

// asyncSink queues each line with the time it was logged. The line's
// values are formatted when it is written, later and on another
// goroutine, so log only values nobody changes afterwards (strings,
// numbers, copies), as every caller in this package does.
type asyncSink struct {
	logr.LogSink
	q *asyncLog
}

func (s asyncSink) Info(level int, msg string, kv ...any) {
	at := time.Now()
	s.q.put(func() { s.LogSink.Info(level, msg, late(at, kv)...) })
}

func (s asyncSink) Error(err error, msg string, kv ...any) {
	at := time.Now()
	s.q.put(func() { s.LogSink.Error(err, msg, late(at, kv)...) })
}

func (s asyncSink) WithValues(kv ...any) logr.LogSink {
	return asyncSink{LogSink: s.LogSink.WithValues(kv...), q: s.q}
}

func (s asyncSink) WithName(name string) logr.LogSink {
	return asyncSink{LogSink: s.LogSink.WithName(name), q: s.q}
}

// late adds when the line was logged, if it waited long enough in the
// queue for the output's timestamp to mislead.
func late(at time.Time, kv []any) []any {
	if time.Since(at) < lateAfter {
		return kv
	}
	return append(kv[:len(kv):len(kv)], "loggedAt", at.UTC().Format(time.RFC3339Nano))
}
