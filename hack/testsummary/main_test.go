package main

import (
	"slices"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name, input, want, output string
		failed                    bool
		report                    string
	}{
		{
			name:  "nothing skipped",
			input: `{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}` + "\n" + `{"Action":"pass","Package":"p","Test":"TestA"}`,
			want:  "skipped: none", output: "=== RUN   TestA\n",
		},
		{
			name: "skips grouped by reason, most first",
			input: strings.Join([]string{
				`{"Action":"output","Package":"p","Test":"TestA","Output":"    netns.go:28: network namespaces need root\n"}`,
				`{"Action":"skip","Package":"p","Test":"TestA"}`,
				`{"Action":"output","Package":"q","Test":"TestB","Output":"    netns.go:28: network namespaces need root\n"}`,
				`{"Action":"skip","Package":"q","Test":"TestB"}`,
				`{"Action":"output","Package":"q","Test":"TestC","Output":"    frr.go:44: needs FRR's vtysh (Debian package frr)\n"}`,
				`{"Action":"skip","Package":"q","Test":"TestC"}`,
				`{"Action":"skip","Package":"q","Test":"TestD"}`,
				`{"Action":"skip","Package":"r"}`,
			}, "\n"),
			want: "skipped: 4 tests (2: network namespaces need root; 1: needs FRR's vtysh (Debian package frr); 1: no reason given)",
			output: "    netns.go:28: network namespaces need root\n    netns.go:28: network namespaces need root\n" +
				"    frr.go:44: needs FRR's vtysh (Debian package frr)\n",
		},
		{
			name:   "a failure",
			input:  `{"Action":"fail","Package":"p","Test":"TestA"}`,
			want:   "skipped: none",
			failed: true,
			report: "\nfailed: 1\n--- FAIL p TestA, the last lines it printed:\n",
		},
		{
			name: "a subtest's failure is repeated once, with its lines, not its parent's or package's",
			input: strings.Join([]string{
				`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
				`{"Action":"output","Package":"p","Test":"TestA/x","Output":"    a_test.go:9: got 1, want 2\n"}`,
				`{"Action":"fail","Package":"p","Test":"TestA/x"}`,
				`{"Action":"output","Package":"p","Test":"TestAB","Output":"    a_test.go:19: other\n"}`,
				`{"Action":"fail","Package":"p","Test":"TestAB"}`,
				`{"Action":"fail","Package":"p","Test":"TestA"}`,
				`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
				`{"Action":"fail","Package":"p"}`,
				`{"Action":"pass","Package":"q","Test":"TestA"}`,
			}, "\n"),
			want:   "skipped: none",
			output: "=== RUN   TestA\n    a_test.go:9: got 1, want 2\n    a_test.go:19: other\nFAIL\n",
			failed: true,
			report: "\nfailed: 2\n--- FAIL p TestA/x, the last lines it printed:\n    |     a_test.go:9: got 1, want 2\n" +
				"--- FAIL p TestAB, the last lines it printed:\n    |     a_test.go:19: other\n",
		},
		{
			name: "a package that fails outside its tests, with the start of its panic",
			input: strings.Join(append([]string{
				`{"Action":"output","Package":"p","Output":"panic: test timed out after 30m0s\n"}`,
				`{"Action":"output","Package":"p","Output":"running tests:\n"}`,
			}, slices.Repeat([]string{`{"Action":"output","Package":"p","Output":"goroutine\n"}`}, tailLines+20)...,
			), "\n") + "\n" + `{"Action":"fail","Package":"p"}`,
			want:   "skipped: none",
			output: "panic: test timed out after 30m0s\nrunning tests:\n" + strings.Repeat("goroutine\n", tailLines+20),
			failed: true,
			report: "\nfailed: 1\n--- FAIL p, the last lines it printed:\n    | panic: test timed out after 30m0s\n    | running tests:\n" +
				strings.Repeat("    | goroutine\n", panicLines-2) + "    | \t...\n" + strings.Repeat("    | goroutine\n", tailLines),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			s, err := summarize(strings.NewReader(tt.input), &out)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.line(); got != tt.want {
				t.Errorf("line = %q, want %q", got, tt.want)
			}
			if out.String() != tt.output {
				t.Errorf("output = %q, want %q", out.String(), tt.output)
			}
			if got := s.report(); got != tt.report {
				t.Errorf("report = %q, want %q", got, tt.report)
			}
			if s.failed != tt.failed {
				t.Errorf("failed = %v, want %v", s.failed, tt.failed)
			}
		})
	}
	if _, err := summarize(strings.NewReader("ok  \tp\t0.1s\n"), &strings.Builder{}); err == nil {
		t.Error("plain go test output was taken for test2json")
	}
}
