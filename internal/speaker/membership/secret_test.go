package membership

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/memberlist"
)

// sha256("") written out, so the test does not recompute what it checks.
const emptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestKeyFromSecret(t *testing.T) {
	digest := mustHex(emptyDigest)
	base64Secret := []byte("u6h3YtUNL0n1Vx9c4w8q0Hn0J3Zr0qv5Yw0e3p6d7XU+Jt2Fo0s8Zq1Bw3Cx5Dy==\n")
	tests := []struct {
		name    string
		secret  []byte
		want    []byte
		wantErr error
	}{
		{name: "empty", secret: nil, wantErr: ErrEmptySecret},
		{name: "one byte is padded with sha256 of nothing", secret: []byte("a"),
			want: append([]byte("a"), digest[:31]...)},
		{name: "31 bytes", secret: bytes.Repeat([]byte{0xff}, 31),
			want: append(bytes.Repeat([]byte{0xff}, 31), digest[0])},
		{name: "exactly 32 bytes are the key", secret: bytes.Repeat([]byte{1}, 32), want: bytes.Repeat([]byte{1}, 32)},
		{name: "longer: its first 32 bytes", secret: base64Secret, want: base64Secret[:32]},
		{name: "a trailing newline is part of a short secret", secret: []byte("secret\n"),
			want: append([]byte("secret\n"), digest[:25]...)},
		{name: "too large", secret: make([]byte, maxSecretSize+1), wantErr: ErrSecretTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := KeyFromSecret(tt.secret)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("key (-want +got):\n%s", diff)
			}
			if err == nil {
				if err := memberlist.ValidateKey(got); err != nil {
					t.Errorf("memberlist rejects the key: %v", err)
				}
			}
		})
	}
}

func TestReadSecretKey(t *testing.T) {
	dir := t.TempDir()
	mounted := filepath.Join(dir, "mounted")
	if err := os.Mkdir(mounted, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := []byte("0123456789abcdef0123456789abcdefTAIL")
	write := func(path string, b []byte) string {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(filepath.Join(mounted, SecretKeyFile), secret)
	plainFile := write(filepath.Join(dir, "key"), secret)
	emptyFile := write(filepath.Join(dir, "empty"), nil)
	hugeFile := write(filepath.Join(dir, "huge"), make([]byte, maxSecretSize+10))
	emptyDir := t.TempDir()

	tests := []struct {
		name    string
		path    string
		want    []byte
		wantErr error
	}{
		{name: "directory holding secretkey, as MetalLB mounts it", path: mounted, want: secret[:32]},
		{name: "the file itself", path: plainFile, want: secret[:32]},
		{name: "missing file", path: filepath.Join(dir, "nope"), wantErr: fs.ErrNotExist},
		{name: "directory without secretkey", path: emptyDir, wantErr: fs.ErrNotExist},
		{name: "empty file", path: emptyFile, wantErr: ErrEmptySecret},
		{name: "more than a Secret holds", path: hugeFile, wantErr: ErrSecretTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSecretKey(tt.path)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			pending := errors.Is(tt.wantErr, fs.ErrNotExist) || errors.Is(tt.wantErr, ErrEmptySecret)
			if KeyPending(err) != pending {
				t.Errorf("KeyPending(%v) = %v, want %v", err, !pending, pending)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("key (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzReadSecretKey: whatever bytes the Secret holds, reading it either
// fails with ErrEmptySecret (no bytes) or gives a key memberlist accepts
// that starts with the secret and is padded with sha256 of nothing.
func FuzzReadSecretKey(f *testing.F) {
	f.Add([]byte("a"))
	f.Add([]byte("secret\n"))
	f.Add(bytes.Repeat([]byte("x"), 32))
	f.Add(bytes.Repeat([]byte{0, 0xff}, 100))
	digest := mustHex(emptyDigest)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, secret []byte) {
		path := filepath.Join(dir, SecretKeyFile)
		if err := os.WriteFile(path, secret, 0o600); err != nil {
			t.Fatal(err)
		}
		key, err := ReadSecretKey(dir)
		if len(secret) == 0 {
			if !errors.Is(err, ErrEmptySecret) {
				t.Fatalf("empty secret: error %v, want ErrEmptySecret", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("secret of %d bytes: %v", len(secret), err)
		}
		if err := memberlist.ValidateKey(key); err != nil || len(key) != 32 {
			t.Fatalf("key of %d bytes rejected: %v", len(key), err)
		}
		n := min(len(secret), 32)
		if !bytes.Equal(key[:n], secret[:n]) || !bytes.Equal(key[n:], digest[:32-n]) {
			t.Fatalf("key %x is not secret %x padded with sha256(\"\")", key, secret)
		}
	})
}
