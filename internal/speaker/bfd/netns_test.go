package bfd_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

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
	reg          *prometheus.Registry
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
	l := &frrLab{router: netns.New(tb, "bfd-rtr"), node: netns.New(tb, "bfd-node"), events: &recorder{}, reg: prometheus.NewRegistry()}
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

	l.m = bfd.NewManager(log, bfd.Options{OnStateChange: l.events.record, Registerer: l.reg})
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

	t.Run("sockets use the RFC 5881 ports", func(t *testing.T) {
		out, err := exec.Command("ip", "netns", "exec", l.node.Name, "ss", "-Hunl").CombinedOutput()
		if err != nil {
			t.Fatalf("ss: %v: %s", err, out)
		}
		var control, source int
		for _, f := range strings.Fields(string(out)) {
			i := strings.LastIndexByte(f, ':')
			port, err := strconv.Atoi(f[i+1:])
			if i < 0 || err != nil {
				continue
			}
			switch {
			case port == bfd.ControlPort:
				control++
			case port >= bfd.SourcePortMin && port <= bfd.SourcePortMax:
				source++
			}
		}
		if control != 2 || source != 2 {
			t.Errorf("sockets on port 3784: %d, in the source range: %d; want 2 and 2 (IPv4, IPv6):\n%s", control, source, out)
		}
	})

	// bfdd itself drops single-hop packets whose TTL is not 255, so the
	// sessions being Up shows ours leave with 255. This shows we drop the
	// ones that arrive with less.
	t.Run("a packet from beyond one hop is discarded", func(t *testing.T) {
		for i, k := range l.keys {
			st, _ := l.m.Status(k)
			pkt, err := bfd.ControlPacket{State: bfd.Down, Diag: bfd.DiagPathDown, DetectMult: 3,
				MyDiscriminator: st.RemoteDiscriminator, YourDiscriminator: st.LocalDiscriminator}.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			sendWithTTL(t, l.router, k.Remote, k.Local, 254, pkt)
			waitFor(t, "the discard counted", 5*time.Second, func() error {
				if got := discarded(t, l.reg, "ttl"); got != float64(i+1) {
					return fmt.Errorf("discarded{reason=ttl} = %g", got)
				}
				return nil
			})
			if st, _ := l.m.Status(k); st.State != bfd.Up {
				t.Errorf("%s: %s after a Down packet with TTL 254", k, st.State)
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

// sendWithTTL sends one UDP datagram to the control port from inside ns
// with the given TTL or hop limit.
func sendWithTTL(t *testing.T, ns *netns.NS, from, to netip.Addr, ttl int, b []byte) {
	t.Helper()
	err := ns.Run(func() error {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0)))
		if err != nil {
			return err
		}
		defer c.Close()
		if from.Is4() {
			err = ipv4.NewConn(c).SetTTL(ttl)
		} else {
			err = ipv6.NewConn(c).SetHopLimit(ttl)
		}
		if err != nil {
			return err
		}
		_, err = c.WriteToUDPAddrPort(b, netip.AddrPortFrom(to, bfd.ControlPort))
		return err
	})
	if err != nil {
		t.Fatalf("send with TTL %d: %v", ttl, err)
	}
}

func discarded(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "steadylb_bfd_control_packets_discarded_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
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
