package membership

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Changing the key of a running cluster. The speakers read the key from a
// mounted Secret, which the kubelet rewrites on each node at its own time,
// up to a minute or two apart. A member that switched to the new key at
// once could no longer be read by those that have not seen it yet, and
// they would declare it dead: two halves, each answering for every
// address. So a member moves in three steps, each only once every known
// member is ready for it, and publishes where it stands in its memberlist
// metadata (fingerprints of its keys, never the keys):
//
//  1. it accepts the new key (memberlist decrypts with every key of its
//     keyring) and still sends with the old one;
//  2. once every member it knows accepts the new key, it sends with it;
//  3. once every member it knows sends with it, it drops the old key.
//
// At every step each member can read what every other one sends. A member
// that runs a version without this metadata holds the others at step 1
// (they accept the new key and keep sending with the old one) until it is
// upgraded. A speaker that starts with only the new key while the others
// know only the old one cannot join them until they have read it too;
// they then know it (memberlist merges the state it sent), which lets
// them move on.

// ErrNotEncrypted is returned by UseSecretKey for a membership started
// without a key: memberlist cannot start encrypting a running cluster.
var ErrNotEncrypted = errors.New("the membership was started without a key")

// updateTimeout bounds the wait for a metadata broadcast to go out.
const updateTimeout = time.Second

// keyPrint is a short public fingerprint of a key: 8 bytes of SHA-256 over
// a label and the key, in hex. It tells members apart by key without
// giving the key away.
func keyPrint(key []byte) string {
	sum := sha256.Sum256(append([]byte("steadylb memberlist key\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// keyMetaTag starts the metadata, so that another version's metadata is
// not mistaken for it.
const keyMetaTag = "steadylb-keys/1"

// keyMeta is where a member stands: the key it sends with and the keys it
// accepts (the primary among them).
type keyMeta struct {
	primary  string
	accepted []string
}

func (k keyMeta) encode() []byte {
	return []byte(keyMetaTag + " " + k.primary + " " + strings.Join(k.accepted, ","))
}

// parseKeyMeta reads what encode wrote; ok is false for anything else,
// including a peer of another version. It comes from the network.
func parseKeyMeta(b []byte) (keyMeta, bool) {
	fields := strings.Fields(string(b))
	if len(fields) != 3 || fields[0] != keyMetaTag {
		return keyMeta{}, false
	}
	k := keyMeta{primary: fields[1], accepted: strings.Split(fields[2], ",")}
	if !slices.Contains(k.accepted, k.primary) {
		return keyMeta{}, false
	}
	return k, true
}

// keyMeta is this member's standing, for NodeMeta.
func (f *fence) keyMeta() []byte {
	if f.keyring == nil {
		return nil
	}
	k := keyMeta{primary: keyPrint(f.keyring.GetPrimaryKey())}
	for _, key := range f.keyring.GetKeys() {
		k.accepted = append(k.accepted, keyPrint(key))
	}
	slices.Sort(k.accepted)
	return k.encode()
}

// UseSecretKey moves this member towards key (a 16, 24 or 32-byte AES
// key, as ReadSecretKey returns) by at most one of the steps above, and
// reports whether it is there: key is the only key, and the one it sends
// with. Call it again, on every read of the Secret, until it is; each call
// costs a look at the members' metadata, and a metadata broadcast
// when it takes a step.
func (m *Members) UseSecretKey(key []byte) (done bool, err error) {
	if m.keyring == nil {
		return false, ErrNotEncrypted
	}
	if m.closed.Load() {
		return false, ErrClosed
	}
	// A copy: the keyring rewrites the slice it returns in place.
	keys := slices.Clone(m.keyring.GetKeys())
	print := keyPrint(key)
	switch {
	case !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }):
		if err := m.keyring.AddKey(key); err != nil {
			return false, fmt.Errorf("accept the new memberlist key: %w", err)
		}
		m.log.Info("new memberlist key: accepting it, and sending with the old one until every member has it", "key", print)
		return false, m.publish()
	case !bytes.Equal(m.keyring.GetPrimaryKey(), key):
		if !m.everyKnown(func(k keyMeta) bool { return slices.Contains(k.accepted, print) }) {
			return false, nil
		}
		if err := m.keyring.UseKey(key); err != nil {
			return false, fmt.Errorf("send with the new memberlist key: %w", err)
		}
		m.log.Info("every member accepts the new memberlist key: sending with it", "key", print)
		return false, m.publish()
	case len(keys) > 1:
		if !m.everyKnown(func(k keyMeta) bool { return k.primary == print }) {
			return false, nil
		}
		for _, k := range keys {
			if !bytes.Equal(k, key) {
				if err := m.keyring.RemoveKey(k); err != nil {
					return false, fmt.Errorf("drop the old memberlist key: %w", err)
				}
			}
		}
		m.log.Info("every member sends with the new memberlist key: the old one is dropped", "key", print)
		return true, m.publish()
	default:
		return true, nil
	}
}

// everyKnown reports whether every member this one knows (alive, or gone
// within deadRetention, this one included) publishes a standing that
// satisfies ok. Not only the live ones: under load a member may be taken
// for dead for a moment, and moving on without it would leave it unable
// to read the others when it is back. A member that is really gone holds
// the rotation up until it is forgotten, deadRetention after it went.
func (m *Members) everyKnown(ok func(keyMeta) bool) bool {
	for _, meta := range m.view.knownMetas() {
		k, parsed := parseKeyMeta([]byte(metaLine(meta, keyMetaTag)))
		if !parsed || !ok(k) {
			return false
		}
	}
	return true
}

// publish broadcasts this member's new standing.
func (m *Members) publish() error {
	if err := m.ml.UpdateNode(updateTimeout); err != nil {
		return fmt.Errorf("publish the memberlist key change: %w", err)
	}
	return nil
}
