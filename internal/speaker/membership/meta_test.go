package membership

import (
	"strings"
	"testing"
)

func TestTokenOf(t *testing.T) {
	token := "0123456789abcdef"
	keys := keyMeta{primary: "p", accepted: []string{"p"}}.encode()
	for _, tc := range []struct {
		name string
		meta []byte
		want string
	}{
		{"token alone", tokenMeta(token), token},
		{"after the keys", joinMeta(keys, tokenMeta(token)), token},
		{"before an unknown line", joinMeta(tokenMeta(token), []byte("steadylb-other/9 x")), token},
		{"keys alone (another version)", keys, ""},
		{"none", nil, ""},
		{"short", tokenMeta("0123"), ""},
		{"not hex", tokenMeta("0123456789abcdeg"), ""},
		{"upper case", tokenMeta(strings.ToUpper(token)), ""},
		{"trailing field", []byte(fenceMetaTag + " " + token + " x"), ""},
		{"tag without a space", []byte(fenceMetaTag + token), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tokenOf(tc.meta); got != tc.want {
				t.Errorf("tokenOf(%q) = %q, want %q", tc.meta, got, tc.want)
			}
		})
	}
	if k, ok := parseKeyMeta([]byte(metaLine(joinMeta(keys, tokenMeta(token)), keyMetaTag))); !ok || k.primary != "p" {
		t.Errorf("the key standing beside a token reads as %+v, %v", k, ok)
	}
}

// FuzzTokenOf: metadata comes from the network; reading it never panics,
// and a token it returns is one newToken could have drawn.
func FuzzTokenOf(f *testing.F) {
	f.Add(joinMeta(keyMeta{primary: "p", accepted: []string{"p"}}.encode(), tokenMeta(newToken())))
	f.Add([]byte(fenceMetaTag + " \n" + fenceMetaTag + " "))
	f.Fuzz(func(t *testing.T, meta []byte) {
		if token := tokenOf(meta); token != "" && !validToken(token) {
			t.Fatalf("tokenOf(%q) = %q, not a token", meta, token)
		}
		_ = metaLine(meta, keyMetaTag)
	})
}

func TestNewTokenIsValidAndFresh(t *testing.T) {
	a, b := newToken(), newToken()
	if !validToken(a) || !validToken(b) || a == b {
		t.Errorf("newToken gave %q and %q", a, b)
	}
}
