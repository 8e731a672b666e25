// Command testsummary reads `go test -json` on stdin, prints the test
// output as go test would, and ends with one line saying how many tests
// were skipped and why, grouped by the reason each skip gave (e.g. the
// network tests without root or FRR), so a run that skipped half the
// suite does not look like a full pass. It exits 1 when a test or a
// package failed, or when the input is not test2json.
//
//	go test -json ./... | go run ./hack/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// event is one line of test2json output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// summary is what a run skipped, and whether anything failed.
type summary struct {
	skipped map[string]int // reason -> tests
	failed  bool
}

// location is the "file_test.go:12: " prefix go test puts before a
// test's log line.
var location = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// summarize copies the test output from r to w and counts the skips.
func summarize(r io.Reader, w io.Writer) (summary, error) {
	s := summary{skipped: map[string]int{}}
	// The last line each test printed before it skipped: t.Skip's reason.
	last := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return s, fmt.Errorf("not go test -json output: %q: %w", sc.Text(), err)
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			if _, err := io.WriteString(w, e.Output); err != nil {
				return s, err
			}
		case "output":
			if _, err := io.WriteString(w, e.Output); err != nil {
				return s, err
			}
			line := strings.TrimSpace(e.Output)
			if e.Test != "" && location.MatchString(e.Output) {
				last[key] = strings.TrimSpace(location.ReplaceAllString(line, ""))
			}
		case "skip":
			if e.Test != "" {
				reason := last[key]
				if reason == "" {
					reason = "no reason given"
				}
				s.skipped[reason]++
			}
		case "fail":
			s.failed = true
		}
	}
	return s, sc.Err()
}

// line is the closing line: how many tests were skipped, and why.
func (s summary) line() string {
	total := 0
	reasons := make([]string, 0, len(s.skipped))
	for r, n := range s.skipped {
		total += n
		reasons = append(reasons, r)
	}
	if total == 0 {
		return "skipped: none"
	}
	// Most frequent first, then by text, so the line is stable.
	slices.SortFunc(reasons, func(a, b string) int {
		if s.skipped[a] != s.skipped[b] {
			return s.skipped[b] - s.skipped[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d: %s", s.skipped[r], r)
	}
	return fmt.Sprintf("skipped: %d tests (%s)", total, strings.Join(parts, "; "))
}

func main() {
	s, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	fmt.Println(s.line())
	if s.failed {
		os.Exit(1)
	}
}
