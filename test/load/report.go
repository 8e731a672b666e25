package load

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"
)

// Report is what a run of requests felt like.
type Report struct {
	// Sent counts requests, Failed those that got no answer.
	Sent, Failed int
	// Errors counts the failures by kind ("timeout", "connection
	// refused", ...).
	Errors map[string]int
	// LongestGap is the longest time without a successful answer, from
	// the start of the run to its end; GapFrom is when it began.
	LongestGap time.Duration
	GapFrom    time.Time
	// Slowest is the longest a successful request took.
	Slowest time.Duration
	// ByNode and ByPod count successful answers by the node and Pod that
	// gave them.
	ByNode, ByPod map[string]int
	// Sources counts successful answers by the source address the backend
	// saw (without the port).
	Sources map[string]int
	// LongestStall is the longest the generator itself was not scheduled
	// on time (Result.Stalled): a gap about as long is the machine's.
	LongestStall time.Duration
	// Failures are the first failed requests, in the order they were sent,
	// for the failure report.
	Failures []Result
}

// keptFailures is how many failed requests a Report keeps.
const keptFailures = 20

// Summarize reports on the results of a run that lasted from start to end.
// Results need not be in order.
func Summarize(results []Result, start, end time.Time) Report {
	r := Report{Errors: map[string]int{}, ByNode: map[string]int{}, ByPod: map[string]int{}, Sources: map[string]int{}}
	var done []time.Time
	for _, res := range results {
		r.Sent++
		r.LongestStall = max(r.LongestStall, res.Stalled)
		if !res.OK() {
			r.Failed++
			r.Errors[res.Err]++
			r.Failures = append(r.Failures, res)
			continue
		}
		done = append(done, res.Done())
		r.Slowest = max(r.Slowest, res.Took)
		r.ByNode[res.Answer.Node]++
		r.ByPod[res.Answer.Pod]++
		host, _, err := net.SplitHostPort(res.Answer.Client)
		if err != nil {
			host = res.Answer.Client
		}
		r.Sources[host]++
	}
	slices.SortFunc(r.Failures, func(a, b Result) int { return a.Sent.Compare(b.Sent) })
	r.Failures = r.Failures[:min(len(r.Failures), keptFailures)]
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	prev := start
	for _, t := range append(done, end) {
		if gap := t.Sub(prev); gap > r.LongestGap {
			r.LongestGap, r.GapFrom = gap, prev
		}
		if t.After(prev) {
			prev = t
		}
	}
	return r
}

// String is a one-line summary for logs and benchmark output.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests, %d failed", r.Sent, r.Failed)
	if len(r.Errors) > 0 {
		b.WriteString(" (")
		for i, kind := range slices.Sorted(maps.Keys(r.Errors)) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s: %d", kind, r.Errors[kind])
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", longest gap %v, slowest %v, generator stalled up to %v, by node %v", r.LongestGap.Round(time.Millisecond),
		r.Slowest.Round(time.Millisecond), r.LongestStall.Round(time.Millisecond), r.ByNode)
	return b.String()
}
