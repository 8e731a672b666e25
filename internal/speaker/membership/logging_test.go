package membership

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		line, level, msg string
	}{
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:5000\n", "DEBUG", "Stream connection from=127.0.0.1:5000"},
		{"[WARN] memberlist: Refuting a suspect message (from: node-b)\n", "WARN", "Refuting a suspect message (from: node-b)"},
		{"[ERR] Failed to shutdown transport: closed\n", "ERR", "Failed to shutdown transport: closed"},
		{"[INFO] memberlist: Suspect node-c has failed, no acks received", "INFO", "Suspect node-c has failed, no acks received"},
		{"no level at all\n", "", "no level at all"},
		{"[unterminated level", "", "[unterminated level"},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			level, msg := parseLine(tt.line)
			if diff := cmp.Diff([2]string{tt.level, tt.msg}, [2]string{level, msg}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStdLoggerLevels(t *testing.T) {
	var got []string
	sink := funcr.New(func(prefix, args string) { got = append(got, args) }, funcr.Options{Verbosity: 1})
	std := newStdLogger(sink, nil)
	std.Printf("[DEBUG] memberlist: probing %s", "node-b")
	std.Printf("[INFO] memberlist: Marking %s as failed", "node-b")
	std.Printf("[WARN] memberlist: Refuting")
	std.Printf("[ERR] memberlist: Failed to send gossip")
	want := []string{
		`"level"=1 "msg"="probing node-b"`,
		`"level"=0 "msg"="Marking node-b as failed"`,
		`"level"=0 "msg"="Refuting" "severity"="warning"`,
		`"msg"="Failed to send gossip" "error"=null`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}

	// At the default verbosity the debug chatter is dropped.
	got = nil
	newStdLogger(funcr.New(func(_, args string) { got = append(got, args) }, funcr.Options{}), nil).
		Printf("[DEBUG] memberlist: chatter")
	if len(got) != 0 {
		t.Errorf("debug line logged at verbosity 0: %v", got)
	}
}

// FuzzParseLine: memberlist lines carry names and addresses that peers
// chose; parsing never panics and never invents text.
func FuzzParseLine(f *testing.F) {
	f.Add("[DEBUG] memberlist: Stream connection from=127.0.0.1:5000\n")
	f.Add("[]")
	f.Add("[ERR")
	f.Fuzz(func(t *testing.T, line string) {
		level, msg := parseLine(line)
		if !strings.Contains(line, level) || !strings.Contains(line, msg) {
			t.Fatalf("parseLine(%q) = %q, %q: not parts of the line", line, level, msg)
		}
		if len(level)+len(msg) > len(line) {
			t.Fatalf("parseLine(%q) = %q, %q: longer than the line", line, level, msg)
		}
	})
}

// TestUntilStopped: once stopped, a logger and every logger derived from
// it drop Info and Error lines alike; before, they pass them on.
func TestUntilStopped(t *testing.T) {
	var got []string
	stopped := new(atomic.Bool)
	log := untilStopped(funcr.New(func(_, args string) { got = append(got, args) }, funcr.Options{}), stopped)
	derived := log.WithName("memberlist").WithValues("self", "node-a")
	log.Info("before")
	derived.Error(nil, "before")
	if len(got) != 2 {
		t.Fatalf("before stopping, %d lines logged, want 2: %q", len(got), got)
	}
	stopped.Store(true)
	log.Info("after")
	derived.Info("after")
	derived.Error(nil, "after")
	newStdLogger(derived, nil).Print("[WARN] memberlist: after")
	if len(got) != 2 {
		t.Errorf("after stopping, lines still logged: %q", got[2:])
	}
	if untilStopped(logr.Discard(), stopped).GetSink() != nil {
		t.Error("a discarding logger gained a sink")
	}
}
