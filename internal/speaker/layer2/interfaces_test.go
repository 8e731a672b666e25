package layer2

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

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
