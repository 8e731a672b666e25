package l2probe_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSweep asks for several addresses of both families in one go, the
// hosts' kernels answering: each address gets its holders' MACs, two for
// an address both hold, none for an address nobody holds.
func TestSweep(t *testing.T) {
	s := newSegment(t)
	p := s.prober(t)
	for _, a := range []string{"198.51.100.1/24", "198.51.100.2/24", "2001:db8::1/64", "2001:db8::2/64"} {
		addAddr(t, s.a, netip.MustParsePrefix(a))
	}
	for _, a := range []string{"198.51.100.2/24", "2001:db8::3/64"} {
		addAddr(t, s.b, netip.MustParsePrefix(a))
	}
	var addrs []netip.Addr
	for _, a := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.9", "2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8::9"} {
		addrs = append(addrs, netip.MustParseAddr(a))
	}
	got, err := p.Sweep(context.Background(), addrs, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.macA.String(), s.macB.String()
	both := []string{a, b}
	if b < a {
		both = []string{b, a}
	}
	want := map[string][]string{
		"198.51.100.1": {a}, "198.51.100.2": both,
		"2001:db8::1": {a}, "2001:db8::2": {a}, "2001:db8::3": {b},
	}
	have := map[string][]string{}
	for addr, answers := range got {
		have[addr.String()] = macs(answers)
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Errorf("Sweep answers (-want +got):\n%s", d)
	}
}

// TestSweepAs asks from a MAC that is not the interface's: the kernels
// answer to it, and the prober hears those answers, and only those, for
// that sweep.
func TestSweepAs(t *testing.T) {
	s := newSegment(t)
	p := s.prober(t)
	for _, a := range []string{"198.51.100.1/24", "2001:db8::1/64"} {
		addAddr(t, s.a, netip.MustParsePrefix(a))
	}
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")}
	for _, from := range []string{"02:00:00:00:5e:01", "02:00:00:00:5e:02"} {
		mac, err := net.ParseMAC(from)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.SweepAs(context.Background(), mac, addrs, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, addr := range addrs {
			if d := cmp.Diff([]string{s.macA.String()}, macs(got[addr])); d != "" {
				t.Errorf("asked from %s, answers for %s (-want +got):\n%s", from, addr, d)
			}
		}
	}
}
