package layer2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
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
	if opts.StallLimit == 0 {
		// Real time, unlike the fake clock: a loaded test machine must
		// not close the gate under tests of something else (gate_test.go).
		opts.StallLimit = -1
	}
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
