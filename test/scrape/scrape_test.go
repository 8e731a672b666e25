package scrape

import (
	"strings"
	"testing"
)

const exposition = `# HELP pool_in_use Addresses in use.
# TYPE pool_in_use gauge
pool_in_use{pool="a"} 4
pool_in_use{pool="b"} 2
# TYPE writes_total counter
writes_total 0
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 3
latency_seconds_bucket{le="+Inf"} 5
latency_seconds_sum 0.9
latency_seconds_count 5
# TYPE requests_total counter
requests_total{verb="PATCH",resource="services",code="200"} 7
requests_total{verb="PATCH",resource="services",code="409"} 1
`

func TestValue(t *testing.T) {
	s, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		labels []string
		want   float64
		wantOK bool
	}{
		{"pool_in_use", []string{"pool", "a"}, 4, true},
		{"pool_in_use", nil, 6, true},
		{"pool_in_use", []string{"pool", "c"}, 0, false},
		{"writes_total", nil, 0, true},
		{"latency_seconds_count", nil, 5, true},
		{"latency_seconds_bucket", []string{"le", "0.1"}, 3, true},
		{"requests_total", []string{"verb", "PATCH", "resource", "services"}, 8, true},
		{"requests_total", []string{"verb", "PATCH", "code", "409"}, 1, true},
		{"requests", nil, 0, false}, // a prefix is not a name
	}
	for _, tt := range tests {
		got, ok := s.Value(tt.name, tt.labels...)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Value(%s, %q) = %v, %v; want %v, %v", tt.name, tt.labels, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	if _, err := Parse(strings.NewReader("pool_in_use{pool=\"a\" 4\n")); err == nil {
		t.Error("parsed an unterminated label set")
	}
}
