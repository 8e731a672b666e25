package bfd_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/test/frr"
	"github.com/steadylb/steadylb/test/netns"
)

// The router namespace runs FRR's bfdd; the node namespace runs our
// Manager; eth0 joins them.
var (
	routerV4, nodeV4 = netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	routerV6, nodeV6 = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
)

// frrLab is FRR's bfdd in one namespace and a Manager in another.
type frrLab struct {
	router, node *netns.NS
	frr          *frr.Router
	m            *bfd.Manager
	events       *recorder
	keys         []bfd.Key // our sessions, IPv4 then IPv6
}

// frrConfig has bfdd peer with the node over both families at MetalLB's
// default timers (also FRR's), and log its state changes.
const frrConfig = `debug bfd peer
bfd
 peer 198.51.100.2 local-address 198.51.100.1
  receive-interval 300
  transmit-interval 300
  detect-multiplier 3
 !
 peer 2001:db8::2 local-address 2001:db8::1
  receive-interval 300
  transmit-interval 300
  detect-multiplier 3
 !
!
`

func newFRRLab(tb testing.TB, log logr.Logger, profile bfd.Profile) *frrLab {
	tb.Helper()
	frr.Require(tb, "bfdd")
	l := &frrLab{router: netns.New(tb, "bfd-rtr"), node: netns.New(tb, "bfd-node"), events: &recorder{}}
	netns.Veth(tb, l.router, "eth0", l.node, "eth0")
	for _, side := range []struct {
		ns     *netns.NS
		v4, v6 netip.Addr
	}{{l.router, routerV4, routerV6}, {l.node, nodeV4, nodeV6}} {
		// Keep the addresses, and skip duplicate detection, across the
		// link going down and up.
		side.ns.Sysctl(tb, "net.ipv6.conf.eth0.keep_addr_on_down", "1")
		side.ns.IP(tb, "addr", "add", side.v4.String()+"/24", "dev", "eth0")
		side.ns.IP(tb, "addr", "add", side.v6.String()+"/64", "dev", "eth0", "nodad")
	}
	l.frr = frr.Start(tb, l.router, map[string]string{"bfdd": frrConfig})

	l.m = bfd.NewManager(log, bfd.Options{OnStateChange: l.events.record, Registerer: prometheus.NewRegistry()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Start opens its sockets on a thread inside the node namespace.
	go func() { done <- l.node.Run(func() error { return l.m.Start(ctx) }) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Start: %v", err)
		}
	})
	for _, p := range []bfd.Peer{
		{Local: nodeV4, Remote: routerV4, Interface: "eth0", Profile: profile},
		{Local: nodeV6, Remote: routerV6, Profile: profile},
	} {
		if err := l.m.AddSession(ctx, p); err != nil {
			tb.Fatal(err)
		}
		l.keys = append(l.keys, p.Key())
	}
	return l
}

// recorder keeps the Manager's events with the time they were reported.
type recorder struct {
	mu     sync.Mutex
	events []bfd.Event
	at     []time.Time
}

func (r *recorder) record(ev bfd.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	r.at = append(r.at, time.Now())
}

// since returns the events from index i on, with their times.
func (r *recorder) since(i int) ([]bfd.Event, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i > len(r.events) {
		i = len(r.events)
	}
	return append([]bfd.Event(nil), r.events[i:]...), append([]time.Time(nil), r.at[i:]...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// frrPeer is bfdd's view of our address.
func (l *frrLab) frrPeer(tb testing.TB, ours netip.Addr) frr.BFDPeer {
	tb.Helper()
	p, ok := l.frr.BFDPeers(tb)[ours.String()]
	if !ok {
		tb.Fatalf("bfdd has no peer %s", ours)
	}
	return p
}

// waitFor polls cond until it holds, failing tb after limit.
func waitFor(tb testing.TB, what string, limit time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v: %v", what, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bothIn waits until our session k and bfdd's peer entry are in state
// (bfdd's lowercase status), and our local diag is diag.
func (l *frrLab) bothIn(tb testing.TB, k bfd.Key, st bfd.State, diag bfd.Diag, limit time.Duration) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("%s %s on both sides", k, st), limit, func() error {
		ours, ok := l.m.Status(k)
		if !ok {
			return fmt.Errorf("no session")
		}
		theirs := l.frrPeer(tb, k.Local)
		if ours.State != st || ours.LocalDiag != diag || theirs.Status != strings.ToLower(st.String()) {
			return fmt.Errorf("ours %s/%s, bfdd's %s/%s", ours.State, ours.LocalDiag, theirs.Status, theirs.Diagnostic)
		}
		return nil
	})
}

func TestFRR(t *testing.T) {
	l := newFRRLab(t, testr.New(t), bfd.Profile{})
	for _, k := range l.keys {
		l.bothIn(t, k, bfd.Up, bfd.DiagNone, 15*time.Second)
	}

	t.Run("both sides agree", func(t *testing.T) {
		for _, k := range l.keys {
			ours, _ := l.m.Status(k)
			theirs := l.frrPeer(t, k.Local)
			if theirs.RemoteID != ours.LocalDiscriminator || theirs.ID != ours.RemoteDiscriminator {
				t.Errorf("%s: bfdd's id/remote-id %d/%d, ours %d/%d", k, theirs.ID, theirs.RemoteID, ours.RemoteDiscriminator, ours.LocalDiscriminator)
			}
			if theirs.RemoteReceiveInterval != 300 || theirs.RemoteTransmitInterval != 300 || theirs.RemoteDetectMultiplier != 3 {
				t.Errorf("%s: bfdd sees our timers %d/%d x%d, want 300/300 x3", k, theirs.RemoteReceiveInterval, theirs.RemoteTransmitInterval, theirs.RemoteDetectMultiplier)
			}
			if ours.TransmitInterval != 300*time.Millisecond || ours.DetectionTime != 900*time.Millisecond {
				t.Errorf("%s: negotiated %v TX, %v detection; want 300ms, 900ms", k, ours.TransmitInterval, ours.DetectionTime)
			}
		}
	})

	t.Run("cutting the link brings both down", func(t *testing.T) {
		from := l.events.len()
		l.node.IP(t, "link", "set", "eth0", "down")
		for _, k := range l.keys {
			l.bothIn(t, k, bfd.Down, bfd.DiagControlDetectionTimeExpired, 10*time.Second)
			if d := l.frrPeer(t, k.Local).Diagnostic; !strings.Contains(d, "detection time expired") {
				t.Errorf("%s: bfdd's diagnostic %q, want detection time expired", k, d)
			}
		}
		evs, _ := l.events.since(from)
		for _, k := range l.keys {
			want := bfd.Event{Peer: k, Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagControlDetectionTimeExpired, RemoteState: bfd.Down}
			if !contains(evs, want) {
				t.Errorf("events %+v lack %+v", evs, want)
			}
		}
	})

	t.Run("restoring the link brings both up", func(t *testing.T) {
		l.node.IP(t, "link", "set", "eth0", "up")
		for _, k := range l.keys {
			l.bothIn(t, k, bfd.Up, bfd.DiagNone, 15*time.Second)
		}
	})

	t.Run("FRR shutting its peer down", func(t *testing.T) {
		k := l.keys[0]
		from := l.events.len()
		peerCmd := fmt.Sprintf("peer %s local-address %s", k.Local, k.Remote)
		l.frr.VTY(t, "bfdd", "configure terminal", "bfd", peerCmd, "shutdown")
		waitFor(t, "our side down", 10*time.Second, func() error {
			if st, _ := l.m.Status(k); st.State != bfd.Down || st.LocalDiag != bfd.DiagNeighborSignaledDown || st.RemoteState != bfd.AdminDown {
				return fmt.Errorf("%+v", st)
			}
			return nil
		})
		evs, _ := l.events.since(from)
		if len(evs) == 0 || !evs[0].PeerAdminDown() {
			t.Errorf("events %+v, want the peer's AdminDown first", evs)
		}
		l.frr.VTY(t, "bfdd", "configure terminal", "bfd", peerCmd, "no shutdown")
		l.bothIn(t, k, bfd.Up, bfd.DiagNone, 15*time.Second)
	})

	t.Run("removing our session", func(t *testing.T) {
		k := l.keys[1]
		if err := l.m.RemoveSession(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "bfdd to see our AdminDown", 10*time.Second, func() error {
			if p := l.frrPeer(t, k.Local); p.Status != "down" || !strings.Contains(p.RemoteDiagnostic, "administratively down") {
				return fmt.Errorf("bfdd: %s, remote diagnostic %q", p.Status, p.RemoteDiagnostic)
			}
			return nil
		})
		if st, _ := l.m.Status(l.keys[0]); st.State != bfd.Up {
			t.Errorf("the other session went %s", st.State)
		}
	})
}

func contains(evs []bfd.Event, want bfd.Event) bool {
	for _, ev := range evs {
		if ev == want {
			return true
		}
	}
	return false
}

// TestFRRPassive: a passive session comes up with FRR as the active side.
func TestFRRPassive(t *testing.T) {
	l := newFRRLab(t, testr.New(t), bfd.Profile{PassiveMode: true})
	for _, k := range l.keys {
		l.bothIn(t, k, bfd.Up, bfd.DiagNone, 15*time.Second)
	}
}
