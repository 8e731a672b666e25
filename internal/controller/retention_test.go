package controller

import (
	"testing"
	"time"
)

func TestParseRetainFor(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"0", 0, true}, {"5m", 5 * time.Minute, true}, {"720h", 720 * time.Hour, true},
		{"721h", 0, false}, {"-1s", 0, false}, {"5", 0, false}, {"soon", 0, false}, {"", 0, false},
	} {
		got, err := ParseRetainFor(tt.value)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseRetainFor(%q) = %s, %v; want %s, ok %v", tt.value, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseRetainFor(f *testing.F) {
	for _, s := range []string{"0", "5m", "1h30m", "-1s", "9999999h", "1e3s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		d, err := ParseRetainFor(value)
		if err == nil && (d < 0 || d > maxRetainFor) {
			t.Fatalf("ParseRetainFor(%q) = %s, outside the bounds", value, d)
		}
		if err != nil && d != 0 {
			t.Fatalf("ParseRetainFor(%q) = %s with error %v, want 0", value, d, err)
		}
	})
}
