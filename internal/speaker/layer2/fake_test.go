package layer2

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"

	"github.com/steadylb/steadylb/internal/speaker/layer2/wire"
)

var (
	_ FrameConn   = (*fakeConn)(nil)
	_ GroupMember = (*fakeConn)(nil)
)

// fakeConn is an in-memory FrameConn: the test delivers frames with
// deliver and reads what the responder wrote with written.
type fakeConn struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once

	mu     sync.Mutex
	out    [][]byte
	groups map[netip.Addr]int // joins minus leaves
}

func newFakeConn() *fakeConn {
	return &fakeConn{in: make(chan []byte, 64), closed: make(chan struct{}), groups: map[netip.Addr]int{}}
}

func (c *fakeConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case f := <-c.in:
		return copy(b, f), nil, nil
	case <-c.closed:
		return 0, nil, net.ErrClosed
	}
}

func (c *fakeConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, slices.Clone(b))
	return len(b), nil
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *fakeConn) JoinGroup(g netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups[g]++
	return nil
}

func (c *fakeConn) LeaveGroup(g netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups[g]--
	if c.groups[g] == 0 {
		delete(c.groups, g)
	}
	return nil
}

func (c *fakeConn) deliver(t testing.TB, frame []byte) {
	t.Helper()
	select {
	case c.in <- frame:
	case <-time.After(5 * time.Second):
		t.Fatal("responder is not reading")
	}
}

func (c *fakeConn) written() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.out)
}

func (c *fakeConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *fakeConn) joined() []netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gs []netip.Addr
	for g, n := range c.groups {
		if n != 1 {
			panic(fmt.Sprintf("group %s joined %d times", g, n))
		}
		gs = append(gs, g)
	}
	slices.SortFunc(gs, netip.Addr.Compare)
	return gs
}

// fakeHost is the interfaces of a host and the connections opened on them.
type fakeHost struct {
	mu       sync.Mutex
	links    []Link
	conns    map[responderKey][]*fakeConn // every connection opened, oldest first
	failOpen map[string]error
}

func newFakeHost(links ...Link) *fakeHost {
	return &fakeHost{links: links, conns: map[responderKey][]*fakeConn{}, failOpen: map[string]error{}}
}

func (h *fakeHost) Links() ([]Link, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.links), nil
}

func (h *fakeHost) Open(l Link, p Protocol) (FrameConn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.failOpen[l.Name]; err != nil {
		return nil, err
	}
	c := newFakeConn()
	key := responderKey{l.Name, p}
	h.conns[key] = append(h.conns[key], c)
	return c, nil
}

func (h *fakeHost) setLinks(links ...Link) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.links = links
}

func (h *fakeHost) setFailOpen(name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failOpen[name] = err
}

// conn is the newest connection for (link, p), nil if none was opened.
func (h *fakeHost) conn(link string, p Protocol) *fakeConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.conns[responderKey{link, p}]
	if len(cs) == 0 {
		return nil
	}
	return cs[len(cs)-1]
}

func (h *fakeHost) opened(link string, p Protocol) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns[responderKey{link, p}])
}

// Test links: two usable Ethernet interfaces and the kinds that are not.
var (
	macEth0  = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x10}
	macEth1  = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x11}
	macAsker = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0xaa}

	usableFlags = net.FlagUp | net.FlagBroadcast | net.FlagMulticast | net.FlagRunning

	// Both on the test subnets, as two ports of a node on one LAN.
	testSubnets = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/64")}
	eth0        = Link{Name: "eth0", Index: 2, HardwareAddr: macEth0, Flags: usableFlags, Prefixes: testSubnets}
	eth1        = Link{Name: "eth1", Index: 3, HardwareAddr: macEth1, Flags: usableFlags, Prefixes: testSubnets}
	lo          = Link{Name: "lo", Index: 1, HardwareAddr: nil, Flags: net.FlagUp | net.FlagLoopback | net.FlagRunning}
	port0       = Link{Name: "port0", Index: 4, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 0, 0x14}, Flags: usableFlags, MasterIndex: 6}
	down0       = Link{Name: "down0", Index: 5, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 0, 0x15}, Flags: net.FlagBroadcast}
	tun0        = Link{Name: "tun0", Index: 7, Flags: net.FlagUp | net.FlagPointToPoint | net.FlagRunning}
	askerV4     = netip.MustParseAddr("198.51.100.200")
	askerV6     = netip.MustParseAddr("fe80::aa")
)

// arpRequest asks, from the asker, who has target.
func arpRequest(t testing.TB, target netip.Addr) []byte {
	t.Helper()
	p, err := arp.NewPacket(arp.OperationRequest, macAsker, askerV4, ethernet.Broadcast, target)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.MarshalARP(p, ethernet.Broadcast)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// solicit asks, from the asker's link-local address, who has target.
func solicit(t testing.TB, target netip.Addr) []byte {
	t.Helper()
	return solicitFrom(t, askerV6, target, true)
}

func solicitFrom(t testing.TB, src, target netip.Addr, withSource bool) []byte {
	t.Helper()
	group, err := ndp.SolicitedNodeMulticast(target)
	if err != nil {
		t.Fatal(err)
	}
	ns := &ndp.NeighborSolicitation{TargetAddress: target}
	if withSource {
		ns.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: macAsker}}
	}
	f, err := wire.MarshalNDP(wire.NDP{
		EthSource: macAsker, EthDestination: wire.MulticastMAC(group),
		Source: src, Destination: group, Message: ns,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ask builds the question for addr in its protocol.
func ask(t testing.TB, addr netip.Addr) []byte {
	if addr.Is4() {
		return arpRequest(t, addr)
	}
	return solicit(t, addr)
}

// sent is one frame a responder wrote, decoded.
type sent struct {
	Kind   string // "reply" or "announce"
	Target netip.Addr
	MAC    string // the MAC claimed for Target
	To     string // Ethernet destination
	ToIP   netip.Addr
}

// decodeSent decodes a frame a responder wrote; it fails the test for
// frames a responder must never write.
func decodeSent(t testing.TB, frame []byte) sent {
	t.Helper()
	if p, eth, err := wire.ParseARP(frame); err == nil {
		if !slices.Equal(eth.Source, p.SenderHardwareAddr) {
			t.Fatalf("arp from %s claims %s", eth.Source, p.SenderHardwareAddr)
		}
		s := sent{Kind: "reply", Target: p.SenderIP, MAC: p.SenderHardwareAddr.String(), To: eth.Destination.String(), ToIP: p.TargetIP}
		switch {
		case p.SenderIP == p.TargetIP:
			s.Kind = "announce"
		case p.Operation != arp.OperationReply:
			t.Fatalf("responder sent an arp request that is no announcement: %+v", p)
		case !slices.Equal(p.TargetHardwareAddr, eth.Destination):
			t.Fatalf("arp reply for %s sent to %s", p.TargetHardwareAddr, eth.Destination)
		}
		return s
	}
	m, err := wire.ParseNDP(frame)
	if err != nil {
		t.Fatalf("responder sent an undecodable frame: %v", err)
	}
	na, ok := m.Message.(*ndp.NeighborAdvertisement)
	if !ok || !na.Override || m.Source != na.TargetAddress {
		t.Fatalf("responder sent %T %+v from %s", m.Message, m.Message, m.Source)
	}
	mac, _ := wire.LinkLayerAddress(na.Options, ndp.Target)
	s := sent{Kind: "reply", Target: na.TargetAddress, MAC: mac.String(), To: m.EthDestination.String(), ToIP: m.Destination}
	if !na.Solicited {
		s.Kind = "announce"
	}
	return s
}

func decodeAll(t testing.TB, frames [][]byte) []sent {
	t.Helper()
	var out []sent
	for _, f := range frames {
		out = append(out, decodeSent(t, f))
	}
	return out
}

// eventually polls cond until it holds or five seconds pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
