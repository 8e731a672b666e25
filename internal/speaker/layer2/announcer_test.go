package layer2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	testclock "k8s.io/utils/clock/testing"
)

// harness is a started Announcer on a fake host with a fake clock.
type harness struct {
	a       *Announcer
	host    *fakeHost
	clk     *testclock.FakeClock
	reg     *prometheus.Registry
	changed chan struct{}
	stop    func()
}

func startAnnouncer(t *testing.T, host *fakeHost, opts Options) *harness {
	t.Helper()
	h := &harness{
		host:    host,
		clk:     testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		reg:     prometheus.NewRegistry(),
		changed: make(chan struct{}, 100),
	}
	opts.Links, opts.Open, opts.Clock, opts.Registerer = host.Links, host.Open, h.clk, h.reg
	opts.InterfacesChanged = func() { h.changed <- struct{}{} }
	h.a = NewAnnouncer(testr.New(t), opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.a.Start(ctx) }()
	stopped := false
	h.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	}
	t.Cleanup(h.stop)
	return h
}

// announce calls Announce with addresses written as strings and returns
// the result the same way.
func (h *harness) announce(t *testing.T, want map[string][]string) (map[string][]string, []string) {
	t.Helper()
	w := map[netip.Addr][]string{}
	for s, names := range want {
		w[netip.MustParseAddr(s)] = names
	}
	answering, missing := h.a.Announce(context.Background(), w)
	got := map[string][]string{}
	for addr, names := range answering {
		got[addr.String()] = names
	}
	return got, missing
}

// sentOn decodes everything written on every connection opened for
// (link, p).
func (h *harness) sentOn(t *testing.T, link string, p Protocol) []sent {
	t.Helper()
	h.host.mu.Lock()
	conns := slices.Clone(h.host.conns[responderKey{link, p}])
	h.host.mu.Unlock()
	var all []sent
	for _, c := range conns {
		all = append(all, decodeAll(t, c.written())...)
	}
	return all
}

// rounds counts the announcement rounds sent for addr on link.
func (h *harness) rounds(t *testing.T, link string, addr netip.Addr) int {
	t.Helper()
	n := 0
	for _, s := range h.sentOn(t, link, protocolOf(addr)) {
		if s.Kind == "announce" && s.Target == addr {
			n++
		}
	}
	return n / framesPerRound(addr)
}

func framesPerRound(addr netip.Addr) int {
	if addr.Is4() {
		return 2 // request and reply
	}
	return 1
}

// stepUntil advances the fake clock in small steps until cond holds. Small
// steps, rather than one exact step, keep it independent of when the
// responder registers its next timer.
func (h *harness) stepUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() bool {
		if cond() {
			return true
		}
		h.clk.Step(50 * time.Millisecond)
		return false
	})
}

func (h *harness) replies(t *testing.T, link string, addr netip.Addr) int {
	t.Helper()
	n := 0
	for _, s := range h.sentOn(t, link, protocolOf(addr)) {
		if s.Kind == "reply" && s.Target == addr {
			n++
		}
	}
	return n
}

func TestAnnounceSelectsInterfaces(t *testing.T) {
	tests := []struct {
		name          string
		want          map[string][]string
		wantAnswering map[string][]string
		wantMissing   []string
		wantOpen      []string
	}{
		{
			name:          "every usable interface",
			want:          map[string][]string{"198.51.100.1": nil},
			wantAnswering: map[string][]string{"198.51.100.1": {"eth0", "eth1"}},
			wantOpen:      []string{"eth0/arp", "eth1/arp"},
		},
		{
			name:          "ipv6 on every usable interface",
			want:          map[string][]string{"2001:db8::1": {}},
			wantAnswering: map[string][]string{"2001:db8::1": {"eth0", "eth1"}},
			wantOpen:      []string{"eth0/ndp", "eth1/ndp"},
		},
		{
			name:          "restricted to one",
			want:          map[string][]string{"198.51.100.1": {"eth1"}},
			wantAnswering: map[string][]string{"198.51.100.1": {"eth1"}},
			wantOpen:      []string{"eth1/arp"},
		},
		{
			name:          "listed twice",
			want:          map[string][]string{"198.51.100.1": {"eth1", "eth1"}},
			wantAnswering: map[string][]string{"198.51.100.1": {"eth1"}},
			wantOpen:      []string{"eth1/arp"},
		},
		{
			name:          "one listed interface missing",
			want:          map[string][]string{"198.51.100.1": {"nope", "eth1"}},
			wantAnswering: map[string][]string{"198.51.100.1": {"eth1"}},
			wantMissing:   []string{"nope"},
			wantOpen:      []string{"eth1/arp"},
		},
		{
			name:        "only missing interfaces",
			want:        map[string][]string{"198.51.100.1": {"nope", "gone"}, "2001:db8::1": {"gone"}},
			wantMissing: []string{"gone", "nope"},
		},
		{
			name: "listed interfaces that cannot answer",
			want: map[string][]string{"198.51.100.1": {"lo", "port0", "down0", "tun0"}},
		},
		{
			name: "each address its own interfaces",
			want: map[string][]string{
				"198.51.100.1": nil,
				"198.51.100.2": {"eth0"},
				"2001:db8::1":  {"eth1"},
			},
			wantAnswering: map[string][]string{
				"198.51.100.1": {"eth0", "eth1"},
				"198.51.100.2": {"eth0"},
				"2001:db8::1":  {"eth1"},
			},
			wantOpen: []string{"eth0/arp", "eth1/arp", "eth1/ndp"},
		},
		{
			name: "keys that are not plain addresses",
			want: map[string][]string{"fe80::1%eth0": nil, "::ffff:198.51.100.1": nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAnnouncer(t, newFakeHost(lo, eth0, eth1, port0, down0, tun0), Options{})
			answering, missing := h.announce(t, tt.want)
			if d := cmp.Diff(tt.wantAnswering, answering, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("answering (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantMissing, missing); d != "" {
				t.Errorf("missing (-want +got):\n%s", d)
			}
			var open []string
			for _, l := range []Link{lo, eth0, eth1, port0, down0, tun0} {
				for _, p := range []Protocol{ARP, NDP} {
					if c := h.host.conn(l.Name, p); c != nil && !c.isClosed() {
						open = append(open, fmt.Sprintf("%s/%s", l.Name, p))
					}
				}
			}
			if d := cmp.Diff(tt.wantOpen, open); d != "" {
				t.Errorf("responders (-want +got):\n%s", d)
			}
		})
	}
}

func TestAnswersOnlyOnAllowedInterfaces(t *testing.T) {
	for _, fam := range []struct{ onEth0, onEth1 string }{
		{"198.51.100.1", "198.51.100.2"},
		{"2001:db8::1", "2001:db8::2"},
	} {
		t.Run(fam.onEth0, func(t *testing.T) {
			h := startAnnouncer(t, newFakeHost(eth0, eth1), Options{})
			h.announce(t, map[string][]string{fam.onEth0: {"eth0"}, fam.onEth1: {"eth1"}})
			a, b := netip.MustParseAddr(fam.onEth0), netip.MustParseAddr(fam.onEth1)
			conn := h.host.conn("eth0", protocolOf(a))
			conn.deliver(t, ask(t, b))
			conn.deliver(t, ask(t, a))
			eventually(t, "eth0 answers for "+fam.onEth0, func() bool { return h.replies(t, "eth0", a) == 1 })
			if n := h.replies(t, "eth0", b); n != 0 {
				t.Errorf("eth0 answered %d times for %s, which only eth1 may answer", n, b)
			}
			for _, s := range h.sentOn(t, "eth0", protocolOf(a)) {
				if s.MAC != macEth0.String() {
					t.Errorf("eth0 claimed %s for %s", s.MAC, s.Target)
				}
			}
		})
	}
}

func TestAnnouncesOnTakeover(t *testing.T) {
	tests := []struct {
		addr, sync string
		first      []sent
	}{
		{
			addr: "198.51.100.1", sync: "198.51.100.9",
			first: []sent{
				{Kind: "announce", Target: netip.MustParseAddr("198.51.100.1"), MAC: macEth0.String(), To: "ff:ff:ff:ff:ff:ff", ToIP: netip.MustParseAddr("198.51.100.1")},
				{Kind: "announce", Target: netip.MustParseAddr("198.51.100.1"), MAC: macEth0.String(), To: "ff:ff:ff:ff:ff:ff", ToIP: netip.MustParseAddr("198.51.100.1")},
			},
		},
		{
			addr: "2001:db8::1", sync: "2001:db8::9",
			first: []sent{
				{Kind: "announce", Target: netip.MustParseAddr("2001:db8::1"), MAC: macEth0.String(), To: "33:33:00:00:00:01", ToIP: netip.MustParseAddr("ff02::1")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			h := startAnnouncer(t, newFakeHost(eth0), Options{})
			addr, sync := netip.MustParseAddr(tt.addr), netip.MustParseAddr(tt.sync)
			h.announce(t, map[string][]string{tt.addr: nil})
			eventually(t, "the first announcement", func() bool { return h.rounds(t, "eth0", addr) == 1 })
			if d := cmp.Diff(tt.first, h.sentOn(t, "eth0", protocolOf(addr)), addrCmp); d != "" {
				t.Errorf("first announcement (-want +got):\n%s", d)
			}
			h.stepUntil(t, "four announcements", func() bool { return h.rounds(t, "eth0", addr) == 1+announceRepeats })

			// Long after: announcing another address flushes anything
			// still due, which would come first.
			h.clk.Step(time.Minute)
			h.announce(t, map[string][]string{tt.addr: nil, tt.sync: nil})
			eventually(t, "the next address's announcement", func() bool { return h.rounds(t, "eth0", sync) == 1 })
			if n := h.rounds(t, "eth0", addr); n != 1+announceRepeats {
				t.Errorf("%s, still in the set, announced %d times, want %d", addr, n, 1+announceRepeats)
			}
		})
	}
}

func TestReannounces(t *testing.T) {
	h := startAnnouncer(t, newFakeHost(eth0), Options{ReannounceInterval: 10 * time.Second})
	addr := netip.MustParseAddr("2001:db8::1")
	h.announce(t, map[string][]string{"2001:db8::1": nil})
	h.stepUntil(t, "a periodic announcement after the takeover burst", func() bool {
		return h.rounds(t, "eth0", addr) == 1+announceRepeats+1
	})
}

func TestRemovedAddressIsSilent(t *testing.T) {
	for _, fam := range []struct{ removed, kept string }{
		{"198.51.100.1", "198.51.100.2"},
		{"2001:db8::1", "2001:db8::2"},
	} {
		t.Run(fam.removed, func(t *testing.T) {
			h := startAnnouncer(t, newFakeHost(eth0), Options{})
			removed, kept := netip.MustParseAddr(fam.removed), netip.MustParseAddr(fam.kept)
			h.announce(t, map[string][]string{fam.removed: nil, fam.kept: nil})
			eventually(t, "the first announcements", func() bool {
				return h.rounds(t, "eth0", removed) == 1 && h.rounds(t, "eth0", kept) == 1
			})
			answering, _ := h.announce(t, map[string][]string{fam.kept: nil})
			if d := cmp.Diff(map[string][]string{fam.kept: {"eth0"}}, answering); d != "" {
				t.Errorf("answering (-want +got):\n%s", d)
			}

			// The reader handles frames in order: once kept is answered,
			// removed has been handled too.
			conn := h.host.conn("eth0", protocolOf(kept))
			conn.deliver(t, ask(t, removed))
			conn.deliver(t, ask(t, kept))
			eventually(t, "an answer for the kept address", func() bool { return h.replies(t, "eth0", kept) == 1 })
			if n := h.replies(t, "eth0", removed); n != 0 {
				t.Errorf("answered %d times for the removed address", n)
			}

			// A round goes through addresses in order, removed < kept: once
			// kept's repeat is out, removed's would have been too.
			h.stepUntil(t, "the kept address's repeat", func() bool { return h.rounds(t, "eth0", kept) == 2 })
			if n := h.rounds(t, "eth0", removed); n != 1 {
				t.Errorf("removed address announced %d times, want 1", n)
			}
		})
	}
}

func TestRescanFollowsInterfaces(t *testing.T) {
	h := startAnnouncer(t, newFakeHost(eth0), Options{})
	v4, v6 := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")
	want := map[string][]string{"198.51.100.1": nil, "2001:db8::1": {"eth1"}}
	answering, missing := h.announce(t, want)
	if d := cmp.Diff(map[string][]string{"198.51.100.1": {"eth0"}}, answering); d != "" {
		t.Errorf("answering before eth1 exists (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"eth1"}, missing); d != "" {
		t.Errorf("missing before eth1 exists (-want +got):\n%s", d)
	}

	// eth1 appears: it answers and announces both addresses.
	h.host.setLinks(eth0, eth1)
	h.stepUntil(t, "eth1 announces", func() bool {
		return h.rounds(t, "eth1", v4) >= 1 && h.rounds(t, "eth1", v6) >= 1
	})
	select {
	case <-h.changed:
	case <-time.After(5 * time.Second):
		t.Fatal("InterfacesChanged was not called")
	}
	answering, missing = h.announce(t, want)
	if d := cmp.Diff(map[string][]string{"198.51.100.1": {"eth0", "eth1"}, "2001:db8::1": {"eth1"}}, answering); d != "" {
		t.Errorf("answering once eth1 exists (-want +got):\n%s", d)
	}
	if len(missing) != 0 {
		t.Errorf("missing once eth1 exists = %v", missing)
	}

	// eth0 vanishes: its socket is closed.
	old0 := h.host.conn("eth0", ARP)
	h.host.setLinks(eth1)
	h.stepUntil(t, "eth0's responder closes", old0.isClosed)

	// eth1 is re-created (new index), then changes its MAC: each time a
	// new socket, and announcements with the MAC of the moment.
	recreated := eth1
	recreated.Index = 30
	h.host.setLinks(recreated)
	h.stepUntil(t, "a responder on the re-created eth1", func() bool { return h.host.opened("eth1", ARP) == 2 })
	newMAC := recreated
	newMAC.HardwareAddr = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99}
	h.host.setLinks(newMAC)
	h.stepUntil(t, "eth1 announces its new MAC", func() bool {
		for _, s := range h.sentOn(t, "eth1", NDP) {
			if s.Kind == "announce" && s.Target == v6 && s.MAC == newMAC.HardwareAddr.String() {
				return true
			}
		}
		return false
	})
	if n := h.host.opened("eth1", ARP); n != 3 {
		t.Errorf("eth1 ARP responder opened %d times, want 3", n)
	}

	// eth1 goes down: nothing answers.
	down := newMAC
	down.Flags &^= net.FlagUp
	last := h.host.conn("eth1", ARP)
	h.host.setLinks(down)
	h.stepUntil(t, "the downed eth1's responder closes", last.isClosed)
	answering, _ = h.announce(t, want)
	if len(answering) != 0 {
		t.Errorf("answering with every interface down = %v", answering)
	}
}

func TestOpenFailureIsRetried(t *testing.T) {
	h := startAnnouncer(t, newFakeHost(eth0, eth1), Options{})
	h.host.setFailOpen("eth0", errors.New("operation not permitted"))
	want := map[string][]string{"198.51.100.1": nil}
	answering, _ := h.announce(t, want)
	if d := cmp.Diff(map[string][]string{"198.51.100.1": {"eth1"}}, answering); d != "" {
		t.Errorf("answering while eth0 fails (-want +got):\n%s", d)
	}
	h.host.setFailOpen("eth0", nil)
	h.stepUntil(t, "eth0 opens on a rescan", func() bool { return h.host.opened("eth0", ARP) == 1 })
	answering, _ = h.announce(t, want)
	if d := cmp.Diff(map[string][]string{"198.51.100.1": {"eth0", "eth1"}}, answering); d != "" {
		t.Errorf("answering after eth0 recovered (-want +got):\n%s", d)
	}
}

// layer2Series reads the registry's layer-2 counters as "name{ip} value".
func layer2Series(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "metallb_layer2_") {
			continue
		}
		for _, m := range f.GetMetric() {
			series = append(series, fmt.Sprintf("%s{%s} %g", f.GetName(), m.GetLabel()[0].GetValue(), m.GetCounter().GetValue()))
		}
	}
	return series
}

func TestMetrics(t *testing.T) {
	h := startAnnouncer(t, newFakeHost(eth0), Options{})
	v4, v6 := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")
	h.announce(t, map[string][]string{"198.51.100.1": nil, "2001:db8::1": nil})
	eventually(t, "the first announcements", func() bool {
		return h.rounds(t, "eth0", v4) == 1 && h.rounds(t, "eth0", v6) == 1
	})
	h.host.conn("eth0", ARP).deliver(t, ask(t, v4))
	h.host.conn("eth0", ARP).deliver(t, ask(t, netip.MustParseAddr("198.51.100.7")))
	h.host.conn("eth0", NDP).deliver(t, ask(t, v6))
	h.host.conn("eth0", NDP).deliver(t, ask(t, v6))
	eventually(t, "the answers", func() bool { return h.replies(t, "eth0", v4) == 1 && h.replies(t, "eth0", v6) == 2 })
	want := []string{
		"metallb_layer2_gratuitous_sent{198.51.100.1} 2",
		"metallb_layer2_gratuitous_sent{2001:db8::1} 1",
		"metallb_layer2_requests_received{198.51.100.1} 1",
		"metallb_layer2_requests_received{2001:db8::1} 2",
		"metallb_layer2_responses_sent{198.51.100.1} 1",
		"metallb_layer2_responses_sent{2001:db8::1} 2",
	}
	if d := cmp.Diff(want, layer2Series(t, h.reg)); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
	h.announce(t, map[string][]string{"2001:db8::1": nil})
	want = []string{
		"metallb_layer2_gratuitous_sent{2001:db8::1} 1",
		"metallb_layer2_requests_received{2001:db8::1} 2",
		"metallb_layer2_responses_sent{2001:db8::1} 2",
	}
	if d := cmp.Diff(want, layer2Series(t, h.reg)); d != "" {
		t.Errorf("series after removing the IPv4 address (-want +got):\n%s", d)
	}
}

func TestLifecycle(t *testing.T) {
	t.Run("announce waits for start", func(t *testing.T) {
		host := newFakeHost(eth0)
		a := NewAnnouncer(testr.New(t), Options{Links: host.Links, Open: host.Open})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if answering, missing := a.Announce(ctx, map[netip.Addr][]string{netip.MustParseAddr("198.51.100.1"): nil}); answering != nil || missing != nil {
			t.Errorf("Announce before Start with a cancelled context = %v, %v; want nil, nil", answering, missing)
		}
		result := make(chan map[netip.Addr][]string, 1)
		go func() {
			answering, _ := a.Announce(context.Background(), map[netip.Addr][]string{netip.MustParseAddr("198.51.100.1"): nil})
			result <- answering
		}()
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Start(runCtx) }()
		if got := <-result; len(got) != 1 {
			t.Errorf("Announce once started = %v", got)
		}
		if err := a.Start(runCtx); err == nil {
			t.Error("a second Start succeeded")
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("Start = %v", err)
		}
	})
	t.Run("stop silences everything", func(t *testing.T) {
		h := startAnnouncer(t, newFakeHost(eth0, eth1), Options{})
		h.announce(t, map[string][]string{"198.51.100.1": nil, "2001:db8::1": nil})
		h.stop()
		for _, link := range []string{"eth0", "eth1"} {
			for _, p := range []Protocol{ARP, NDP} {
				if !h.host.conn(link, p).isClosed() {
					t.Errorf("%s/%s still open after Start returned", link, p)
				}
			}
		}
		if series := layer2Series(t, h.reg); len(series) != 0 {
			t.Errorf("series after Start returned: %v", series)
		}
		answering, missing := h.announce(t, map[string][]string{"198.51.100.1": {"eth0", "nope"}})
		if len(answering) != 0 || !slices.Equal(missing, []string{"nope"}) {
			t.Errorf("Announce after Start returned = %v, %v; want nothing answering, nope missing", answering, missing)
		}
	})
}

func TestThousandAddresses(t *testing.T) {
	h := startAnnouncer(t, newFakeHost(eth0, eth1), Options{})
	want := map[string][]string{}
	var all []netip.Addr
	for i := 1; i <= 1000; i++ {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
		want[a.String()] = nil
		all = append(all, a)
	}
	for i := 1; i <= 254; i++ {
		a := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		want[a.String()] = []string{"eth1"}
		all = append(all, a)
	}
	answering, _ := h.announce(t, want)
	if len(answering) != len(want) {
		t.Fatalf("%d addresses answering, want %d", len(answering), len(want))
	}
	for _, a := range []netip.Addr{all[0], all[999], all[1000], all[len(all)-1]} {
		h.host.conn("eth1", protocolOf(a)).deliver(t, ask(t, a))
		eventually(t, "an answer for "+a.String(), func() bool { return h.replies(t, "eth1", a) == 1 })
	}
	eventually(t, "every address announced on eth1", func() bool {
		return len(h.sentOn(t, "eth1", NDP)) >= 1000+2 && len(h.sentOn(t, "eth1", ARP)) >= 2*254+2
	})
}
