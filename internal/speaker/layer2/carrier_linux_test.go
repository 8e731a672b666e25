package layer2

import (
	"net"
	"testing"
)

func TestReturnedSince(t *testing.T) {
	running := net.FlagUp | net.FlagRunning
	for _, tc := range []struct {
		name string
		was  carrier
		now  Link
		want bool
	}{
		{"still up", carrier{running: true, ups: 3}, Link{Flags: running, CarrierUps: 3}, false},
		{"came up", carrier{running: false, ups: 3}, Link{Flags: running, CarrierUps: 4}, true},
		{"down and up folded into one message", carrier{running: true, ups: 3}, Link{Flags: running, CarrierUps: 4}, true},
		{"went down", carrier{running: true, ups: 3}, Link{Flags: net.FlagUp, CarrierUps: 3}, false},
		{"still down", carrier{running: false, ups: 3}, Link{Flags: net.FlagUp, CarrierUps: 3}, false},
		{"came up, kernel without the count", carrier{running: false}, Link{Flags: running}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := returnedSince(tc.was, tc.now); got != tc.want {
				t.Errorf("returnedSince(%+v, %+v) = %v, want %v", tc.was, tc.now, got, tc.want)
			}
		})
	}
}
