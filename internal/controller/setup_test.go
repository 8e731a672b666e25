package controller

import "testing"

func TestBarrierCheck(t *testing.T) {
	elected, standby := closedChannel(), make(chan struct{})
	tests := []struct {
		name      string
		elected   <-chan struct{}
		gateOpen  bool
		wantReady bool
	}{
		{"standby", standby, false, true},
		{"leader before the barrier or without pools", elected, false, false},
		{"leader allocating", elected, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate()
			if tt.gateOpen {
				g.openGate()
			}
			err := barrierCheck(tt.elected, g)(nil)
			if (err == nil) != tt.wantReady {
				t.Errorf("ready = %v (err %v), want %v", err == nil, err, tt.wantReady)
			}
		})
	}
}
