package membership

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// A member's memberlist metadata (NodeMeta, at most 512 bytes) is lines,
// each starting with its tag and a space: the key standing (keys.go),
// with a key only, and the fence token (fence.go). A reader takes the
// lines it knows and ignores the others, so either can change shape
// under a new tag without breaking the other.

// fenceMetaTag starts the line that carries the fence token.
const fenceMetaTag = "steadylb-fence/1"

// tokenLen is the fence token's length in bytes before hex: 64 random
// bits, so that a guess never lands and two lives never share one.
const tokenLen = 8

// joinMeta joins the lines that are there (nil ones are left out).
func joinMeta(lines ...[]byte) []byte {
	var out [][]byte
	for _, l := range lines {
		if l != nil {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte{'\n'})
}

// metaLine returns the line of meta that starts with tag, or "". meta
// comes from the network: nothing here may assume its shape.
func metaLine(meta []byte, tag string) string {
	for line := range strings.SplitSeq(string(meta), "\n") {
		if strings.HasPrefix(line, tag+" ") {
			return line
		}
	}
	return ""
}

// newToken returns a fresh fence token.
func newToken() string {
	b := make([]byte, tokenLen)
	_, _ = rand.Read(b) // never fails (crypto/rand panics on a broken source)
	return hex.EncodeToString(b)
}

// tokenMeta is the metadata line that publishes token.
func tokenMeta(token string) []byte { return []byte(fenceMetaTag + " " + token) }

// tokenOf returns the fence token a member's metadata publishes, or ""
// when it has none (a member of another version) or a malformed one.
func tokenOf(meta []byte) string {
	token, ok := strings.CutPrefix(metaLine(meta, fenceMetaTag), fenceMetaTag+" ")
	if !ok || !validToken(token) {
		return ""
	}
	return token
}

func validToken(token string) bool {
	b, err := hex.DecodeString(token)
	return err == nil && len(b) == tokenLen && strings.ToLower(token) == token
}
