package controller

import "testing"

func TestBarrierCheck(t *testing.T) {
	open, pending := closedChannel(), make(chan struct{})
	tests := []struct {
		name             string
		elected, barrier <-chan struct{}
		wantReady        bool
	}{
		{"standby", pending, pending, true},
		{"leader before the barrier", open, pending, false},
		{"leader after the barrier", open, open, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := barrierCheck(tt.elected, tt.barrier)(nil)
			if (err == nil) != tt.wantReady {
				t.Errorf("ready = %v (err %v), want %v", err == nil, err, tt.wantReady)
			}
		})
	}
}
