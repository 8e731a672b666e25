package membership

import (
	"log"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// untilStopped is l until stopped is set, then a logger that drops every
// line. memberlist's Shutdown does not wait for a probe in flight or its
// suspicion timers, so lines can come after it returns: from a Members
// that is gone, and in tests after the test that owns the logger ended.
func untilStopped(l logr.Logger, stopped *atomic.Bool) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(stoppable{LogSink: l.GetSink(), stopped: stopped})
}

type stoppable struct {
	logr.LogSink
	stopped *atomic.Bool
}

func (s stoppable) Enabled(level int) bool {
	return !s.stopped.Load() && s.LogSink.Enabled(level)
}

// Error is not gated by Enabled in logr.
func (s stoppable) Error(err error, msg string, kv ...any) {
	if !s.stopped.Load() {
		s.LogSink.Error(err, msg, kv...)
	}
}

func (s stoppable) WithValues(kv ...any) logr.LogSink {
	return stoppable{LogSink: s.LogSink.WithValues(kv...), stopped: s.stopped}
}

func (s stoppable) WithName(name string) logr.LogSink {
	return stoppable{LogSink: s.LogSink.WithName(name), stopped: s.stopped}
}

// newStdLogger gives memberlist, which logs through a *log.Logger with a
// "[LEVEL] memberlist: " prefix, a logger that writes to l instead.
// suspected, when set, is called on each line saying that this member
// refutes a suspicion of itself (see refutingSuspect).
func newStdLogger(l logr.Logger, suspected func()) *log.Logger {
	return log.New(logrWriter{log: l, suspected: suspected}, "", 0)
}

// refutingSuspect starts the line memberlist logs, from its packet
// handler, right after it refuted a "suspect" message about this member:
// a peer's probes of this member failed, and unless the refutation
// reaches it within the suspicion time (200 ms in a small cluster) this
// member is declared dead. memberlist has no callback for it; its log line
// is the only signal, and TestSuspicionIsSignalled keeps the two in step.
const refutingSuspect = "Refuting a suspect message"

// logrWriter receives one memberlist line per Write (log.Logger writes
// each Printf whole, serialised by its own mutex).
type logrWriter struct {
	log       logr.Logger
	suspected func()
}

func (w logrWriter) Write(p []byte) (int, error) {
	level, msg := parseLine(string(p))
	if w.suspected != nil && strings.HasPrefix(msg, refutingSuspect) {
		w.suspected()
	}
	switch level {
	case "ERR", "ERROR":
		w.log.Error(nil, msg)
	case "WARN", "WARNING":
		w.log.Info(msg, "severity", "warning")
	case "DEBUG", "TRACE":
		w.log.V(1).Info(msg)
	default:
		w.log.Info(msg)
	}
	return len(p), nil
}

// parseLine splits "[WARN] memberlist: text\n" into "WARN" and "text". A
// line without a level is returned whole with an empty level. Node names
// in the text come from peers, so nothing here may assume its shape.
func parseLine(line string) (level, msg string) {
	msg = strings.TrimRight(line, "\r\n")
	if rest, ok := strings.CutPrefix(msg, "["); ok {
		if end := strings.IndexByte(rest, ']'); end >= 0 {
			level, msg = rest[:end], strings.TrimLeft(rest[end+1:], " ")
		}
	}
	msg = strings.TrimPrefix(msg, "memberlist: ")
	return level, msg
}
