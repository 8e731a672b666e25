package main

import (
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name, input, want, output string
		failed                    bool
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
			if s.failed != tt.failed {
				t.Errorf("failed = %v, want %v", s.failed, tt.failed)
			}
		})
	}
	if _, err := summarize(strings.NewReader("ok  \tp\t0.1s\n"), &strings.Builder{}); err == nil {
		t.Error("plain go test output was taken for test2json")
	}
}
