// Command testsummary reads `go test -json` on stdin, prints the test
// output as go test would, and ends with what failed and with one line
// saying how many tests were skipped and why, grouped by the reason each
// skip gave (e.g. the network tests without root or FRR), so a run that
// skipped half the suite does not look like a full pass. Each failure is
// repeated at the end with the last lines its test printed, because a CI
// log is often read from its tail, and a failure in the middle of an
// hour of output is otherwise lost. It exits 1 when a test or a package
// failed, or when the input is not test2json.
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

// summary is what a run skipped, and what failed.
type summary struct {
	skipped  map[string]int // reason -> tests
	failed   bool
	failures []failure
}

// failure is a test, or a package outside its tests (a build error, a
// timeout's panic, TestMain), that failed, with the last lines it printed.
type failure struct {
	pkg, test string
	tail      []string
}

// tailLines is how many of its last lines a failure is repeated with,
// and panicLines how many of a panic's first lines ("panic: test timed
// out", "running tests:", the tests it stopped).
const (
	tailLines  = 40
	panicLines = 12
)

// tail keeps the last tailLines lines appended to it, and for a package
// the first lines of a panic, which name the test a timeout stopped.
type tail struct {
	lines []string
	panic []string
}

func (t *tail) add(line string) {
	if len(t.lines) == tailLines {
		t.lines = slices.Delete(t.lines, 0, 1)
	}
	t.lines = append(t.lines, line)
	switch {
	case t.panic == nil && strings.HasPrefix(line, "panic: "):
		t.panic = []string{line}
	case len(t.panic) > 0 && len(t.panic) < panicLines:
		t.panic = append(t.panic, line)
	}
}

// text is the panic's first lines, then the last lines, without repeats.
func (t *tail) text() []string {
	if len(t.panic) == 0 || slices.Contains(t.lines, t.panic[0]) {
		return slices.Clone(t.lines)
	}
	return append(append(slices.Clone(t.panic), "\t..."), t.lines...)
}

// location is the "file_test.go:12: " prefix go test puts before a
// test's log line.
var location = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// summarize copies the test output from r to w and counts the skips.
func summarize(r io.Reader, w io.Writer) (summary, error) {
	s := summary{skipped: map[string]int{}}
	// The last line each test printed before it skipped: t.Skip's reason.
	last := map[string]string{}
	tails := map[string]*tail{}
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
			if tails[key] == nil {
				tails[key] = &tail{}
			}
			tails[key].add(strings.TrimRight(e.Output, "\n"))
			line := strings.TrimSpace(e.Output)
			if e.Test != "" && location.MatchString(e.Output) {
				last[key] = strings.TrimSpace(location.ReplaceAllString(line, ""))
			}
		case "pass":
			delete(tails, key) // kept for a failure only
		case "skip":
			delete(tails, key)
			if e.Test != "" {
				reason := last[key]
				if reason == "" {
					reason = "no reason given"
				}
				s.skipped[reason]++
			}
		case "fail":
			s.failed = true
			if !s.failedWithin(e.Package, e.Test) {
				var lines []string
				if t := tails[key]; t != nil {
					lines = t.text()
				}
				s.failures = append(s.failures, failure{pkg: e.Package, test: e.Test, tail: lines})
			}
		}
	}
	return s, sc.Err()
}

// failedWithin reports whether a subtest of test (every test of pkg,
// when test is empty) is already among the failures: a parent fails
// with its subtest, and a package with its tests, and the innermost
// failure is the one whose output explains it.
func (s summary) failedWithin(pkg, test string) bool {
	return slices.ContainsFunc(s.failures, func(f failure) bool {
		return f.pkg == pkg && (test == "" || strings.HasPrefix(f.test, test+"/"))
	})
}

// report is the failures, each with the last lines it printed.
func (s summary) report() string {
	if len(s.failures) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nfailed: %d\n", len(s.failures))
	for _, f := range s.failures {
		name := f.pkg
		if f.test != "" {
			name += " " + f.test
		}
		fmt.Fprintf(&b, "--- FAIL %s, the last lines it printed:\n", name)
		for _, l := range f.tail {
			fmt.Fprintf(&b, "    | %s\n", l)
		}
	}
	return b.String()
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
	fmt.Print(s.report())
	fmt.Println(s.line())
	if s.failed {
		os.Exit(1)
	}
}
