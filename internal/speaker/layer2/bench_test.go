package layer2

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/go-logr/logr"
)

// BenchmarkHandle measures answering one request with 1,000 addresses in
// the set: one parse, one map lookup, one reply.
func BenchmarkHandle(b *testing.B) {
	for _, p := range []Protocol{ARP, NDP} {
		b.Run(p.String(), func(b *testing.B) {
			var addrs []netip.Addr
			for i := range 1000 {
				if p == ARP {
					addrs = append(addrs, netip.AddrFrom4([4]byte{198, 51, 100, byte(i % 250)}))
				} else {
					addrs = append(addrs, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}))
				}
			}
			conn := &countingConn{}
			r := idleResponder(eth0, p, conn, addrs...)
			frame := ask(b, addrs[len(addrs)/2])
			b.ReportAllocs()
			for b.Loop() {
				r.handle(frame)
			}
			if conn.writes != b.N {
				b.Fatalf("%d answers for %d requests", conn.writes, b.N)
			}
		})
	}
}

// BenchmarkAnnounce measures a steady-state Announce of 1,000 IPv6 and 250
// IPv4 addresses on two interfaces (nothing changes, as on most calls).
func BenchmarkAnnounce(b *testing.B) {
	host := newFakeHost(eth0, eth1)
	a := NewAnnouncer(logr.Discard(), Options{Links: host.Links, Open: host.Open})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	defer func() { cancel(); <-done }()
	want := map[netip.Addr][]string{}
	for i := range 1000 {
		want[netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})] = nil
	}
	for i := range 250 {
		want[netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)})] = []string{"eth1"}
	}
	b.ReportAllocs()
	for b.Loop() {
		answering, _ := a.Announce(ctx, want)
		if len(answering) != len(want) {
			b.Fatalf("%d addresses answering, want %d", len(answering), len(want))
		}
	}
}

// countingConn counts writes; idle responders never read from it.
type countingConn struct{ writes int }

func (c *countingConn) ReadFrom([]byte) (int, net.Addr, error) { return 0, nil, net.ErrClosed }
func (c *countingConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.writes++
	return len(b), nil
}
func (c *countingConn) Close() error { return nil }
