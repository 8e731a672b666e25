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
// (transport.go) before memberlist sees it, with its source address.
//
// Each message names the life of the member it silences: every member
// publishes a random fence token in its memberlist metadata (meta.go),
// the sender copies the token it knew when it declared the member dead,
// and the member acts on a message only if it names its current token;
// acting on one draws a new token, published at once. So one declaration
// (two senders, each telling at once and again on the return) makes one
// start-over, a later declaration makes another however soon it comes,
// and a message about an earlier life (a restarted process, a replayed
// packet) does nothing, but for one case: the previous token, once the
// copies of the declaration that replaced it are past (copiesWindow), is
// taken for a new declaration by a member that has not heard the new
// token yet, and acted on once. A member acts on one only when:
//
//   - it names this member and its current token, and a sender memberlist
//     knows (alive, or gone within deadRetention: a member cut off may
//     hear from a peer before it sees that peer alive again), other than
//     itself; one from a sender not known yet is held a few seconds and
//     judged again when that sender joins (a member that just joined
//     hears from the others before its view has them);
//   - with a key: it is sealed (AES-GCM) with one of the keyring's keys, so
//     only a holder of the cluster key can make one, and the token, which
//     travels only in encrypted gossip, is known only to key holders;
//   - without a key: it comes from the sender's own memberlist address and
//     port. Without a key nothing is authenticated (memberlist itself
//     accepts anyone's gossip, including a forged "dead"), so someone who
//     reads the gossip can learn the token and silence a node once per
//     token it learns, as they could make the others take its addresses
//     by forging memberlist's own messages. Someone who cannot read it
//     cannot guess the token.
//
// An earlier version limited the rate instead (three, then one per 10 s).
// Under CPU starvation a member can be declared dead several times in a
// few seconds; the limit then dropped real declarations and the member
// kept answering, for up to 10 s, beside the node that had taken its
// addresses over.
//
// Sending writes one packet on the transport, without memberlist's locks,
// so the view may send from within memberlist's callbacks (the message to
// a member back alive) as well as once a departure is checked
// (departures.go).
const (
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
var declaredDeadTag = []byte("steadylb/declared-dead/3\x00")

// The byte after the tag.
const (
	fencePlain  byte = 0
	fenceSealed byte = 1
)

// encodeDeclaredDead is the payload telling member name, in the life
// that published token, that from declared it dead.
func encodeDeclaredDead(name, from, token string) []byte {
	return []byte(name + "\x00" + from + "\x00" + token)
}

// parseDeclaredDead reads a payload made by encodeDeclaredDead; ok is
// false for anything else. It comes from the network, so it checks
// everything and keeps nothing of msg.
func parseDeclaredDead(msg []byte) (name, from, token string, ok bool) {
	fields := bytes.Split(msg, []byte{0})
	if len(fields) != 3 || len(fields[0]) == 0 || len(fields[1]) == 0 || len(fields[2]) == 0 {
		return "", "", "", false
	}
	return string(fields[0]), string(fields[1]), string(fields[2]), true
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
// the metadata says which keys this member has (keys.go) and its fence
// token; no broadcasts, no state of our own, and user messages ignored.
type fence struct {
	log      logr.Logger
	self     string
	declared chan struct{} // buffered 1
	// rotated signals, coalesced, that the token changed and the
	// metadata must be published again (Members.publishTokens).
	rotated chan struct{}       // buffered 1
	keyring *memberlist.Keyring // nil without a key
	view    *view
	onDead  func() // Options.OnDeclaredDead; nil: none

	accepted, stale, refused atomic.Uint64

	mu    sync.Mutex
	token string // this life's fence token
	// previous is the token before, replaced at rotatedAt; see acts.
	previous  string
	rotatedAt time.Time
	held      map[string]heldPacket // by the sender it names
}

// heldPacket is a declared-dead packet from a sender not yet known.
type heldPacket struct {
	packet []byte
	src    net.Addr
	at     time.Time
}

var _ memberlist.Delegate = (*fence)(nil)

func newFence(log logr.Logger, self string, keyring *memberlist.Keyring, v *view) *fence {
	return &fence{log: log, self: self, declared: make(chan struct{}, 1), rotated: make(chan struct{}, 1),
		keyring: keyring, view: v, token: newToken(), held: map[string]heldPacket{}}
}

func (f *fence) keys() [][]byte {
	if f.keyring == nil {
		return nil
	}
	return f.keyring.GetKeys()
}

func (f *fence) currentToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token
}

// verdict is what judge makes of a packet. Its token is judged by
// accept, under the lock that also draws the next one.
type verdict struct {
	token string // the token it names, when good
	// refused says why it is refused, "" when good; unknown names the
	// sender when that alone refused it.
	refused, unknown string
}

// receive judges one declared-dead packet that arrived from src.
func (f *fence) receive(packet []byte, src net.Addr) {
	v := f.judge(packet, src)
	if v.refused != "" {
		f.refused.Add(1)
		f.log.V(1).Info("ignoring a declared-dead message", "source", src.String(), "reason", v.refused)
		if v.unknown != "" {
			f.hold(v.unknown, packet, src)
		}
		return
	}
	f.accept(src, v.token)
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
	v := f.judge(h.packet, h.src)
	if v.refused != "" {
		return
	}
	// It stays counted as refused on arrival (a counter never goes
	// down) and counts as accepted too.
	f.accept(h.src, v.token)
}

// copiesWindow is how long after acting on a declaration the previous
// token names only its copies: the second sender's, sent at once, and
// each sender's repeat when it sees this member alive again, which comes
// before this member's start over can end (the speaker's grace, a second).
// A message naming the previous token after that is a new declaration by a
// member that has not heard the new token yet (gossip is late when this
// member's memberlist is behind, just when it gets declared dead), and is
// acted on: a node answering beside its replacement costs more than, for
// a late copy, one more start over.
const copiesWindow = time.Second

// acts reports whether a message naming token is acted on now: it names
// the current token, or the previous one once the copies of the
// declaration that replaced it are past. Called with mu held.
func (f *fence) acts(token string, now time.Time) bool {
	return token == f.token || token == f.previous && now.Sub(f.rotatedAt) >= copiesWindow
}

// accept acts on a good packet naming token, unless the token is not one
// acts allows (another copy of the same declaration got there first, or
// the message is about an earlier life), and draws the next token.
func (f *fence) accept(src net.Addr, token string) {
	now := time.Now()
	f.mu.Lock()
	current := f.acts(token, now)
	if current {
		f.previous, f.token, f.rotatedAt = f.token, newToken(), now
	}
	f.mu.Unlock()
	if !current {
		f.stale.Add(1)
		f.log.V(1).Info("ignoring a declared-dead message about an earlier life of this member (a copy already acted on, or a previous process)",
			"source", src.String())
		return
	}
	f.accepted.Add(1)
	if f.onDead != nil {
		f.onDead()
	}
	f.log.Info("another member declared this one dead; it may have taken addresses over", "source", src.String())
	for _, ch := range []chan struct{}{f.rotated, f.declared} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// judge says whether a packet is good (see the top of this file).
func (f *fence) judge(packet []byte, src net.Addr) verdict {
	payload, err := openFence(packet, f.keys())
	if err != nil {
		return verdict{refused: err.Error()}
	}
	name, from, token, ok := parseDeclaredDead(payload)
	switch {
	case !ok:
		return verdict{refused: "malformed"}
	case name != f.self:
		return verdict{refused: "meant for " + name} // sent to our address for a member that used it before
	case from == f.self:
		return verdict{refused: "from this member itself"}
	}
	addr, known := f.view.knownAddr(from)
	switch {
	case !known:
		return verdict{refused: "from " + from + ", not a member (yet)", unknown: from}
	case f.keyring == nil && addrPortOf(src) != addr:
		return verdict{refused: fmt.Sprintf("from %s, whose address is %s", from, addr)}
	}
	return verdict{token: token}
}

func addrPortOf(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		ap := u.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func (f *fence) NodeMeta(int) []byte                 { return joinMeta(f.keyMeta(), tokenMeta(f.currentToken())) }
func (f *fence) GetBroadcasts(int, int) [][]byte     { return nil }
func (f *fence) LocalState(bool) []byte              { return nil }
func (f *fence) MergeRemoteState(buf []byte, _ bool) {}

// NotifyMsg takes the user messages memberlist hands over: only this
// member's own departure checks are expected (departures.go).
func (f *fence) NotifyMsg(msg []byte) {
	if d := f.view.departures; d != nil {
		d.received(msg)
	}
}

// tellDeclaredDead sends member the declared-dead message for the life
// that published token, sealed with the primary key when there is one.
// It only writes a packet on the transport, so the view may call it from
// memberlist's callbacks. A member without a token (another version)
// could not act on it, and is not told.
func (m *Members) tellDeclaredDead(member string, addr netip.AddrPort, token string) {
	if m.closed.Load() || !addr.IsValid() || token == "" {
		return
	}
	var key []byte
	if m.keyring != nil {
		key = m.keyring.GetPrimaryKey()
	}
	packet, err := sealFence(encodeDeclaredDead(member, m.name, token), key)
	if err == nil {
		_, err = m.transport.WriteTo(packet, addr.String())
	}
	if err != nil {
		m.log.Info("could not tell a member it was declared dead", "member", member, "error", err.Error())
		return
	}
	m.log.V(1).Info("told a member it was declared dead", "member", member, "addr", addr.String())
}
