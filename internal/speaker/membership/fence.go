package membership

import (
	"bytes"
	"net"

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
// The message is one small UDP packet through memberlist (encrypted with
// the cluster key when there is one): per departure, two from each member
// that saw it, so at most 2 x (N-1) packets to the member concerned.

// declaredDeadTag starts every declared-dead message, so that other user
// messages, should there ever be any, are not mistaken for one.
var declaredDeadTag = []byte("steadylb/declared-dead/1\x00")

// encodeDeclaredDead is the message telling member name that from
// declared it dead.
func encodeDeclaredDead(name, from string) []byte {
	b := bytes.Clone(declaredDeadTag)
	b = append(b, name...)
	b = append(b, 0)
	return append(b, from...)
}

// parseDeclaredDead reads a message made by encodeDeclaredDead; ok is
// false for anything else. It comes from the network, so it checks
// everything and keeps nothing of msg.
func parseDeclaredDead(msg []byte) (name, from string, ok bool) {
	rest, found := bytes.CutPrefix(msg, declaredDeadTag)
	if !found {
		return "", "", false
	}
	n, f, found := bytes.Cut(rest, []byte{0})
	if !found || len(n) == 0 || len(f) == 0 || bytes.IndexByte(f, 0) >= 0 {
		return "", "", false
	}
	return string(n), string(f), true
}

// fence is memberlist's Delegate: it receives the declared-dead messages
// meant for this member and signals them on declared, coalesced. The
// other Delegate methods are memberlist's defaults (no metadata, no
// broadcasts, no state of our own).
type fence struct {
	log      logr.Logger
	self     string
	declared chan struct{} // buffered 1
}

var _ memberlist.Delegate = (*fence)(nil)

func newFence(log logr.Logger, self string) *fence {
	return &fence{log: log, self: self, declared: make(chan struct{}, 1)}
}

func (f *fence) NotifyMsg(msg []byte) {
	name, from, ok := parseDeclaredDead(msg)
	if !ok {
		f.log.V(1).Info("ignoring a user message that is not ours", "bytes", len(msg))
		return
	}
	if name != f.self {
		// Sent to our address for a member that used it before.
		f.log.V(1).Info("ignoring a declared-dead message for another member", "member", name, "from", from)
		return
	}
	f.log.Info("another member declared this one dead; it may have taken addresses over", "from", from)
	select {
	case f.declared <- struct{}{}:
	default:
	}
}

func (f *fence) NodeMeta(int) []byte                 { return nil }
func (f *fence) GetBroadcasts(int, int) [][]byte     { return nil }
func (f *fence) LocalState(bool) []byte              { return nil }
func (f *fence) MergeRemoteState(buf []byte, _ bool) {}

// tellDeclaredDead sends member the declared-dead message. memberlist
// calls the view's Notify methods with its state lock held, and sending
// takes that lock, so the view calls this in a goroutine of its own.
func (m *Members) tellDeclaredDead(member string, addr net.IP, port uint16) {
	if m.closed.Load() {
		return
	}
	to := &memberlist.Node{Name: member, Addr: addr, Port: port}
	if err := m.ml.SendBestEffort(to, encodeDeclaredDead(member, m.name)); err != nil {
		m.log.Info("could not tell a member it was declared dead", "member", member, "error", err.Error())
		return
	}
	m.log.V(1).Info("told a member it was declared dead", "member", member, "addr", to.Address())
}
