package l2probe_test

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/netns"
)

// segment is a bridge in its own namespace with a client and two hosts
// plugged in, each through its eth0.
type segment struct {
	client, a, b *netns.NS
	macA, macB   net.HardwareAddr
}

func newSegment(t *testing.T) *segment {
	t.Helper()
	lan := netns.New(t, "l2p-lan")
	lan.IP(t, "link", "add", "br0", "type", "bridge")
	lan.IP(t, "link", "set", "br0", "up")
	s := &segment{client: netns.New(t, "l2p-cli"), a: netns.New(t, "l2p-a"), b: netns.New(t, "l2p-b")}
	for i, host := range []*netns.NS{s.client, s.a, s.b} {
		port := []string{"pcli", "pa", "pb"}[i]
		netns.Veth(t, host, "eth0", lan, port)
		lan.IP(t, "link", "set", port, "master", "br0")
	}
	s.client.IP(t, "addr", "add", "198.51.100.100/24", "dev", "eth0")
	s.client.WaitLinkLocal(t, "eth0")
	s.macA, s.macB = s.a.HardwareAddr(t, "eth0"), s.b.HardwareAddr(t, "eth0")
	return s
}

func (s *segment) prober(t *testing.T) *l2probe.Prober {
	t.Helper()
	var p *l2probe.Prober
	if err := s.client.Run(func() (err error) { p, err = l2probe.NewProber("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// addAddr gives host addr and, for IPv6, waits until its kernel has
// joined the solicited-node group: the kernel does that after "ip addr
// add" returns, and drops solicitations for the address until then.
func addAddr(t *testing.T, host *netns.NS, prefix netip.Prefix) {
	t.Helper()
	host.IP(t, "addr", "add", prefix.String(), "dev", "eth0", "nodad")
	if prefix.Addr().Is4() {
		return
	}
	group, err := ndp.SolicitedNodeMulticast(prefix.Addr())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(host.IP(t, "-6", "maddr", "show", "dev", "eth0"), group.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never joined %s", host.Name, group)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func macs(answers []l2probe.Answer) []string {
	var out []string
	for _, a := range answers {
		out = append(out, a.MAC.String())
	}
	slices.Sort(out)
	return out
}

// TestProberAsksTheKernel uses the hosts' own kernels as the answering
// side: they answer ARP and NDP for the addresses they hold.
func TestProberAsksTheKernel(t *testing.T) {
	s := newSegment(t)
	p := s.prober(t)
	ctx := context.Background()
	const window = 300 * time.Millisecond
	for _, addr := range []string{"198.51.100.1/24", "2001:db8::1/64"} {
		t.Run(addr, func(t *testing.T) {
			prefix := netip.MustParsePrefix(addr)
			ip := prefix.Addr()
			addAddr(t, s.a, prefix)

			answers, err := p.Ask(ctx, ip, window)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{s.macA.String()}, macs(answers)); d != "" {
				t.Errorf("one holder: MACs (-want +got):\n%s", d)
			}
			for _, a := range answers {
				if a.At.Before(a.Asked) {
					t.Errorf("answer read at %v, before it was asked at %v", a.At, a.Asked)
				}
			}

			// Both hold it: both answer, each counted once.
			addAddr(t, s.b, prefix)
			answers, err = p.Ask(ctx, ip, window)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{s.macA.String(), s.macB.String()}
			slices.Sort(want)
			if d := cmp.Diff(want, macs(answers)); d != "" {
				t.Errorf("two holders: MACs (-want +got):\n%s", d)
			}

			// Only b: a's MAC is gone from the answers.
			s.a.IP(t, "addr", "del", addr, "dev", "eth0")
			waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			got, err := p.AwaitNewMAC(waitCtx, ip, s.macA, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.MAC, s.macB) {
				t.Errorf("AwaitNewMAC = %s, want b's %s", got.MAC, s.macB)
			}

			// Nobody: no answer, no error.
			s.b.IP(t, "addr", "del", addr, "dev", "eth0")
			answers, err = p.Ask(ctx, ip, window)
			if err != nil || len(answers) != 0 {
				t.Errorf("Ask with no holder = %v, %v; want nothing", macs(answers), err)
			}
		})
	}
}

// TestAwaitNewMACWaitsForAnOwner: with no owner yet, AwaitNewMAC keeps
// asking until one appears.
func TestAwaitNewMACWaitsForAnOwner(t *testing.T) {
	s := newSegment(t)
	p := s.prober(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	result := make(chan l2probe.Answer, 1)
	errc := make(chan error, 1)
	go func() {
		a, err := p.AwaitNewMAC(ctx, netip.MustParseAddr("2001:db8::7"), nil, 50*time.Millisecond)
		errc <- err
		result <- a
	}()
	s.b.IP(t, "addr", "add", "2001:db8::7/64", "dev", "eth0", "nodad")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a := <-result; !slices.Equal(a.MAC, s.macB) {
		t.Errorf("AwaitNewMAC = %s, want %s", a.MAC, s.macB)
	}
	// A cancelled context ends the wait with its error.
	cancel()
	if _, err := p.AwaitNewMAC(ctx, netip.MustParseAddr("198.51.100.9"), nil, 50*time.Millisecond); err == nil {
		t.Error("AwaitNewMAC with a cancelled context succeeded")
	}
}

// TestListenerRecordsAnnouncements sends hand-made announcements from b
// and checks the client's Listener records them, and nothing else.
func TestListenerRecordsAnnouncements(t *testing.T) {
	s := newSegment(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var l *l2probe.Listener
	if err := s.client.Run(func() (err error) { l, err = l2probe.Listen(ctx, "eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	v4, v6 := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")
	var frames [][]byte
	for _, op := range []arp.Operation{arp.OperationRequest, arp.OperationReply} {
		pkt, err := arp.NewPacket(op, s.macB, v4, ethernet.Broadcast, v4)
		if err != nil {
			t.Fatal(err)
		}
		f, err := wire.MarshalARP(pkt, ethernet.Broadcast)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	// Not announcements: an ordinary request, and a solicited answer.
	question, _ := arp.NewPacket(arp.OperationRequest, s.macB, netip.MustParseAddr("198.51.100.2"), ethernet.Broadcast, v4)
	f, err := wire.MarshalARP(question, ethernet.Broadcast)
	if err != nil {
		t.Fatal(err)
	}
	frames = append(frames, f)
	for _, solicited := range []bool{true, false} {
		f, err := wire.MarshalNDP(wire.NDP{
			EthSource: s.macB, EthDestination: wire.MulticastMAC(wire.AllNodes),
			Source: v6, Destination: wire.AllNodes,
			Message: &ndp.NeighborAdvertisement{
				Solicited: solicited, Override: true, TargetAddress: v6,
				Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: s.macB}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	if err := s.b.Run(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		for _, f := range frames {
			et := ethernet.EtherTypeARP
			if f[12] == 0x86 {
				et = ethernet.EtherTypeIPv6
			}
			c, err := wire.Listen(ifi, et, wire.AnyARPFilter())
			if err != nil {
				return err
			}
			_, err = c.WriteTo(f, &packet.Addr{HardwareAddr: f[:6]})
			c.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	waitCtx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWait()
	if _, err := l.Wait(waitCtx, l2probe.ForMAC(v6, s.macB)); err != nil {
		t.Fatalf("no unsolicited advertisement for %s: %v", v6, err)
	}
	type seen struct {
		Addr     string
		MAC      string
		Protocol string
	}
	var got []seen
	for _, a := range l.Seen() {
		got = append(got, seen{a.Addr.String(), a.MAC.String(), a.Protocol})
	}
	want := []seen{
		{"198.51.100.1", s.macB.String(), "arp"},
		{"198.51.100.1", s.macB.String(), "arp"},
		{"2001:db8::1", s.macB.String(), "ndp"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("announcements (-want +got):\n%s", d)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}
