package servicelist

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestShortLivedGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	for _, tc := range []struct {
		name, env, value string
		wantPercent      int
		wantLimit        int64
	}{
		{"no environment", "", "", -1, gcLimit},
		{"GOGC set", "GOGC", "200", 100, math.MaxInt64},
		{"GOMEMLIMIT set", "GOMEMLIMIT", "2GiB", 100, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			if tc.env != "" {
				t.Setenv(tc.env, tc.value)
			}
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			ShortLivedGC()
			if got := debug.SetGCPercent(100); got != tc.wantPercent {
				t.Errorf("GC percent %d, want %d", got, tc.wantPercent)
			}
			if got := debug.SetMemoryLimit(math.MaxInt64); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}
