package load

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ok := func(sent, took int, node string) Result {
		return Result{Sent: at(sent), Took: time.Duration(took) * time.Millisecond,
			Answer: Answer{Pod: "web-" + node, Node: node, Client: "198.51.100.200:40000"}}
	}
	failed := func(sent int, err string) Result {
		return Result{Sent: at(sent), Took: time.Second, Err: err}
	}
	stalled := func(r Result, ms int) Result { r.Stalled = time.Duration(ms) * time.Millisecond; return r }
	tests := []struct {
		name    string
		results []Result
		end     int
		want    Report
	}{{
		name: "nothing sent: the whole run is one gap",
		end:  500,
		want: Report{LongestGap: 500 * time.Millisecond, GapFrom: t0,
			Errors: map[string]int{}, ByNode: map[string]int{}, ByPod: map[string]int{}, Sources: map[string]int{}},
	}, {
		name: "steady answers: the longest gap is between two answers",
		// answers done at 12, 110, 205; the run ends at 300
		results: []Result{ok(100, 10, "node-1"), ok(0, 12, "node-1"), ok(200, 5, "node-2")},
		end:     300,
		want: Report{Sent: 3, LongestGap: 98 * time.Millisecond, GapFrom: at(12), Slowest: 12 * time.Millisecond,
			Errors: map[string]int{}, ByNode: map[string]int{"node-1": 2, "node-2": 1},
			ByPod: map[string]int{"web-node-1": 2, "web-node-2": 1}, Sources: map[string]int{"198.51.100.200": 3}},
	}, {
		name: "failures in between: the gap spans them; an answer that overlaps an earlier one does not shorten it",
		results: []Result{ok(0, 10, "node-1"), failed(20, "timeout"), failed(30, "connection refused"),
			failed(40, "timeout"), ok(500, 5, "node-2"), ok(100, 300, "node-1")},
		end: 600,
		want: Report{Sent: 6, Failed: 3, Errors: map[string]int{"timeout": 2, "connection refused": 1},
			Failures:   []Result{failed(20, "timeout"), failed(30, "connection refused"), failed(40, "timeout")},
			LongestGap: 390 * time.Millisecond, GapFrom: at(10), Slowest: 300 * time.Millisecond,
			ByNode: map[string]int{"node-1": 2, "node-2": 1}, ByPod: map[string]int{"web-node-1": 2, "web-node-2": 1},
			Sources: map[string]int{"198.51.100.200": 3}},
	}, {
		name:    "the end of the run closes the last gap; the generator's longest stall is kept",
		results: []Result{ok(0, 10, "node-1"), stalled(failed(20, "timeout"), 300)},
		end:     1000,
		want: Report{Sent: 2, Failed: 1, Errors: map[string]int{"timeout": 1}, LongestGap: 990 * time.Millisecond,
			Failures: []Result{stalled(failed(20, "timeout"), 300)}, LongestStall: 300 * time.Millisecond,
			GapFrom: at(10), Slowest: 10 * time.Millisecond, ByNode: map[string]int{"node-1": 1},
			ByPod: map[string]int{"web-node-1": 1}, Sources: map[string]int{"198.51.100.200": 1}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.results, t0, at(tt.end))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
		})
	}
}
