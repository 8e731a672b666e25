package speaker

import (
	"testing"
	"time"
)

// TestLocalEndpointFlapNeverDoubles: under externalTrafficPolicy Local, an
// endpoint that flaps between two nodes (A->B->A...) faster than the
// speakers' object writes, at spacings from 0 to 57 ms, never has both
// nodes answer at once (the journal records every Announce and fails the
// test on an overlap), and the address ends with the node that holds the
// endpoint. The flapping must move the address at least once, or the test
// saw no handover.
func TestLocalEndpointFlapNeverDoubles(t *testing.T) {
	l := newLab(t, "a", "b")
	l.pool("lan", []string{"198.51.100.224/28"})
	const addr = "198.51.100.225"
	key := l.service("web", []string{addr}, []string{"a"}, localPolicy)
	l.waitAnswered(addr, "a")
	start := l.journal.length()
	for i := range 40 {
		l.endpoints(key, ready(l.node("b"))...)
		time.Sleep(time.Duration(i%20) * 3 * time.Millisecond)
		l.endpoints(key, ready(l.node("a"))...)
		time.Sleep(time.Duration((i*7)%20) * 3 * time.Millisecond)
	}
	l.waitAnswered(addr, "a")
	l.waitStatusNodes(key, "a")
	if l.journal.firstCall(start, l.node("b"), mustAddr(addr), true) < 0 {
		t.Errorf("b never answered while the endpoint flapped: no handover was tested")
	}
}
