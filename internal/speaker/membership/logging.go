package membership

import (
	"log"
	"strings"

	"github.com/go-logr/logr"
)

// newStdLogger gives memberlist, which logs through a *log.Logger with a
// "[LEVEL] memberlist: " prefix, a logger that writes to l instead.
func newStdLogger(l logr.Logger) *log.Logger {
	return log.New(logrWriter{log: l}, "", 0)
}

// logrWriter receives one memberlist line per Write (log.Logger writes
// each Printf whole, serialised by its own mutex).
type logrWriter struct {
	log logr.Logger
}

func (w logrWriter) Write(p []byte) (int, error) {
	level, msg := parseLine(string(p))
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
