package bgp

import (
	"net/netip"
	"testing"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

func TestPathFailed(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   bfd.Event
		want bool
	}{
		{"our detection time expired", bfd.Event{Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagControlDetectionTimeExpired}, true},
		{"the peer's expired", bfd.Event{Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagNeighborSignaledDown,
			RemoteState: bfd.Down, RemoteDiag: bfd.DiagControlDetectionTimeExpired}, true},
		{"the peer's path is down", bfd.Event{Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagNeighborSignaledDown,
			RemoteState: bfd.Down, RemoteDiag: bfd.DiagPathDown}, true},
		{"the peer went AdminDown", bfd.Event{Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagNeighborSignaledDown,
			RemoteState: bfd.AdminDown, RemoteDiag: bfd.DiagAdministrativelyDown}, false},
		{"the peer replaced its session", bfd.Event{Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagNeighborSignaledDown,
			RemoteState: bfd.Down, RemoteDiag: bfd.DiagNeighborSignaledDown}, false},
		{"never was up", bfd.Event{Old: bfd.Init, New: bfd.Down, Diag: bfd.DiagControlDetectionTimeExpired}, false},
		{"coming up", bfd.Event{Old: bfd.Init, New: bfd.Up}, false},
	} {
		if got := pathFailed(tc.ev); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCounter(t *testing.T) {
	var c counter
	for i, step := range []struct{ seen, want uint64 }{{3, 3}, {5, 5}, {0, 5}, {2, 7}, {2, 7}} {
		if got := c.observe(step.seen); got != step.want {
			t.Errorf("step %d: saw %d, total %d, want %d", i, step.seen, got, step.want)
		}
	}
}

func TestOnSharedNetwork(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.2", true},         // lo's 127.0.0.0/8
		{"203.0.113.250", false},    // used only inside test namespaces
		{"2001:db8:ffff::1", false}, // likewise
	} {
		got, err := onSharedNetwork(netip.MustParseAddr(tc.addr))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("onSharedNetwork(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
