package membership

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/memberlist"
	"golang.org/x/time/rate"
)

// A member declared dead may still be running: frozen, starved of CPU or
// cut off, it missed its probes for a few hundred milliseconds. The other
// speakers then take its addresses over at once, while it, unaware, keeps
// answering for them. Its own view never shows it dead (memberlist only
// refutes), so it must be told. Every member that sees another one gone
// sends it a "declared dead" message straight away, which a frozen member
// finds in its socket buffer when it runs again, and one more when the
// member is back alive, for one that was cut off and lost the first.
// DeclaredDead passes the news to the speaker, which stops answering and
// starts over as if it had just started.
//
// The message silences a node, so it is not one of memberlist's user
// messages, which reach the Delegate without their sender. It is a UDP
// packet of its own on the memberlist port, sent from the sender's
// memberlist socket and taken out of the stream by the transport
// (transport.go) before memberlist sees it, with its source address. A
// member acts on one only when:
//
//   - it names this member, and a sender memberlist knows (alive, or gone
//     within deadRetention: a member cut off may hear from a peer before it
//     sees that peer alive again), other than itself; one from a sender
//     not known yet is held a few seconds and judged again when that
//     sender joins (a member that just joined hears from the others
//     before its view has them);
//   - with a key: it is sealed (AES-GCM) with one of the keyring's keys, so
//     only a holder of the cluster key can make one; an unsealed message
//     is refused;
//   - without a key: it comes from the sender's own memberlist address and
//     port. Without a key nothing is authenticated (memberlist itself
//     accepts anyone's gossip), so this only keeps strangers and other
//     ports out;
//   - and the rate allows: at most fenceBurst at once, then one per
//     fenceEvery. A real declaration brings up to 2 x (N-1) messages in a
//     few hundred milliseconds, all of which the speaker folds into one
//     start-over; a flood of forged ones costs at most one start-over per
//     fenceEvery.
//
// Sending writes one packet on the transport, without memberlist's locks,
// so the view sends from within memberlist's callbacks and no goroutine
// is started for it.
const (
	fenceEvery = 10 * time.Second
	fenceBurst = 3
	// A member that joins sees the others alive only once its join's
	// state exchange is merged, and the member it joined may tell it
	// before that: the message names a sender not yet known. It is held
	// for holdFor and judged again when that sender joins; at most
	// maxHeld are held, so strangers' names cost bounded memory.
	holdFor = 5 * time.Second
	maxHeld = 16
)

// declaredDeadTag starts every declared-dead packet. Its first byte, 's',
// is no memberlist message type, encryption version or label marker, so
// the transport can tell the two apart by it.
var declaredDeadTag = []byte("steadylb/declared-dead/2\x00")

// The byte after the tag.
const (
	fencePlain  byte = 0
	fenceSealed byte = 1
)

// encodeDeclaredDead is the payload telling member name that from
// declared it dead.
func encodeDeclaredDead(name, from string) []byte {
	b := make([]byte, 0, len(name)+1+len(from))
	b = append(b, name...)
	b = append(b, 0)
	return append(b, from...)
}

// parseDeclaredDead reads a payload made by encodeDeclaredDead; ok is
// false for anything else. It comes from the network, so it checks
// everything and keeps nothing of msg.
func parseDeclaredDead(msg []byte) (name, from string, ok bool) {
	n, f, found := bytes.Cut(msg, []byte{0})
	if !found || len(n) == 0 || len(f) == 0 || bytes.IndexByte(f, 0) >= 0 {
		return "", "", false
	}
	return string(n), string(f), true
}

// sealFence makes the packet: the tag, then the payload in the clear
// without a key, or sealed with key (AES-GCM, a random nonce, the tag and
// flag as additional data).
func sealFence(payload, key []byte) ([]byte, error) {
	if key == nil {
		return append(append(bytes.Clone(declaredDeadTag), fencePlain), payload...), nil
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	header := append(bytes.Clone(declaredDeadTag), fenceSealed)
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal declared-dead message: %w", err)
	}
	return gcm.Seal(append(header, nonce...), nonce, payload, header), nil
}

// openFence returns the payload of a packet that starts with the tag. With
// keys, only a packet sealed with one of them opens; without, only a plain
// one.
func openFence(packet []byte, keys [][]byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(packet, declaredDeadTag)
	if !ok || len(rest) == 0 {
		return nil, fmt.Errorf("not a declared-dead message")
	}
	flag, body := rest[0], rest[1:]
	switch {
	case len(keys) == 0 && flag == fencePlain:
		return body, nil
	case len(keys) == 0:
		return nil, fmt.Errorf("sealed, and this member has no key")
	case flag != fenceSealed:
		return nil, fmt.Errorf("not sealed, and the cluster has a key")
	}
	header := packet[:len(declaredDeadTag)+1]
	for _, k := range keys {
		gcm, err := newGCM(k)
		if err != nil || len(body) < gcm.NonceSize() {
			continue
		}
		nonce, sealed := body[:gcm.NonceSize()], body[gcm.NonceSize():]
		if payload, err := gcm.Open(nil, nonce, sealed, header); err == nil {
			return payload, nil
		}
	}
	return nil, fmt.Errorf("sealed with no key this member has")
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("declared-dead message key: %w", err)
	}
	return cipher.NewGCM(block)
}

// isFence tells the transport a declared-dead packet from memberlist's.
func isFence(packet []byte) bool { return bytes.HasPrefix(packet, declaredDeadTag) }

// fence receives the declared-dead packets meant for this member and
// signals them on declared, coalesced. It is also memberlist's Delegate:
// the metadata says which keys this member has (keys.go); no broadcasts,
// no state of our own, and user messages ignored.
type fence struct {
	log      logr.Logger
	self     string
	declared chan struct{}       // buffered 1
	keyring  *memberlist.Keyring // nil without a key
	view     *view
	limit    *rate.Limiter

	accepted, limited, refused atomic.Uint64

	mu   sync.Mutex
	held map[string]heldPacket // by the sender it names
}

// heldPacket is a declared-dead packet from a sender not yet known.
type heldPacket struct {
	packet []byte
	src    net.Addr
	at     time.Time
}

var _ memberlist.Delegate = (*fence)(nil)

func newFence(log logr.Logger, self string, keyring *memberlist.Keyring, v *view) *fence {
	return &fence{log: log, self: self, declared: make(chan struct{}, 1), keyring: keyring, view: v,
		limit: rate.NewLimiter(rate.Every(fenceEvery), fenceBurst), held: map[string]heldPacket{}}
}

func (f *fence) keys() [][]byte {
	if f.keyring == nil {
		return nil
	}
	return f.keyring.GetKeys()
}

// receive judges one declared-dead packet that arrived from src.
func (f *fence) receive(packet []byte, src net.Addr) {
	reason, unknown := f.judge(packet, src)
	if reason != "" {
		f.refused.Add(1)
		f.log.V(1).Info("ignoring a declared-dead message", "source", src.String(), "reason", reason)
		if unknown != "" {
			f.hold(unknown, packet, src)
		}
		return
	}
	f.accept(src)
}

// hold keeps a packet whose sender is not known yet, for joined.
func (f *fence) hold(from string, packet []byte, src net.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for name, h := range f.held {
		if now.Sub(h.at) > holdFor {
			delete(f.held, name)
		}
	}
	if len(f.held) < maxHeld {
		f.held[from] = heldPacket{packet: bytes.Clone(packet), src: src, at: now}
	}
}

// joined judges again the packet held from member, which the view now
// knows. Called from memberlist's callbacks: it only judges and signals.
func (f *fence) joined(member string) {
	f.mu.Lock()
	h, ok := f.held[member]
	delete(f.held, member)
	f.mu.Unlock()
	if !ok || time.Since(h.at) > holdFor {
		return
	}
	if reason, _ := f.judge(h.packet, h.src); reason != "" {
		return
	}
	// It stays counted as refused on arrival (a counter never goes
	// down) and counts as accepted too.
	f.accept(h.src)
}

// accept acts on a good packet, as the rate allows.
func (f *fence) accept(src net.Addr) {
	if !f.limit.Allow() {
		f.limited.Add(1)
		f.log.V(1).Info("ignoring a declared-dead message: too many lately", "source", src.String())
		return
	}
	f.accepted.Add(1)
	f.log.Info("another member declared this one dead; it may have taken addresses over", "source", src.String())
	select {
	case f.declared <- struct{}{}:
	default:
	}
}

// judge returns why a packet is refused, or "" when it is good; unknown
// names the sender when that alone refused it.
func (f *fence) judge(packet []byte, src net.Addr) (reason, unknown string) {
	payload, err := openFence(packet, f.keys())
	if err != nil {
		return err.Error(), ""
	}
	name, from, ok := parseDeclaredDead(payload)
	switch {
	case !ok:
		return "malformed", ""
	case name != f.self:
		return "meant for " + name, "" // sent to our address for a member that used it before
	case from == f.self:
		return "from this member itself", ""
	}
	addr, known := f.view.knownAddr(from)
	if !known {
		return "from " + from + ", not a member (yet)", from
	}
	if f.keyring == nil && addrPortOf(src) != addr {
		return fmt.Sprintf("from %s, whose address is %s", from, addr), ""
	}
	return "", ""
}

func addrPortOf(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		ap := u.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func (f *fence) NotifyMsg([]byte)                    {}
func (f *fence) NodeMeta(int) []byte                 { return f.keyMeta() }
func (f *fence) GetBroadcasts(int, int) [][]byte     { return nil }
func (f *fence) LocalState(bool) []byte              { return nil }
func (f *fence) MergeRemoteState(buf []byte, _ bool) {}

// tellDeclaredDead sends member the declared-dead message, sealed with the
// primary key when there is one. It only writes a packet on the
// transport, so the view may call it from memberlist's callbacks.
func (m *Members) tellDeclaredDead(member string, addr netip.AddrPort) {
	if m.closed.Load() || !addr.IsValid() {
		return
	}
	var key []byte
	if m.keyring != nil {
		key = m.keyring.GetPrimaryKey()
	}
	packet, err := sealFence(encodeDeclaredDead(member, m.name), key)
	if err == nil {
		_, err = m.transport.WriteTo(packet, addr.String())
	}
	if err != nil {
		m.log.Info("could not tell a member it was declared dead", "member", member, "error", err.Error())
		return
	}
	m.log.V(1).Info("told a member it was declared dead", "member", member, "addr", addr.String())
}
