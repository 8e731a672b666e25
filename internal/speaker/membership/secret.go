package membership

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// SecretKeyFile is the key in the memberlist Secret, and so the file name
// when the Secret is mounted as a volume (MetalLB's layout).
const SecretKeyFile = "secretkey"

// maxSecretSize is the most a Kubernetes Secret can hold.
const maxSecretSize = 1 << 20

var (
	// ErrEmptySecret: the secret has no bytes. MetalLB would then run
	// unencrypted; a speaker that was given a key path wants encryption,
	// so this is an error instead.
	ErrEmptySecret = errors.New("memberlist secret is empty")
	// ErrSecretTooLarge: more than a Kubernetes Secret can hold (1 MiB).
	ErrSecretTooLarge = errors.New("memberlist secret is larger than 1 MiB")
)

// KeyPending reports whether an error of ReadSecretKey means that the key
// is not there yet (no file, or an empty one), as in a Secret that has no
// key yet, mounted as a volume, rather than that it cannot be used.
func KeyPending(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrEmptySecret)
}

// ReadSecretKey reads a memberlist secret and returns the 32-byte AES key
// for Options.SecretKey. path is either the directory the Secret is
// mounted on (MetalLB's --ml-secret-key-path), holding the file
// SecretKeyFile, or that file itself. The bytes are used as they are: no
// trimming, no decoding, exactly as MetalLB reads them, so a MetalLB
// Secret gives the same key.
func ReadSecretKey(path string) ([]byte, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, SecretKeyFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read memberlist secret: %w", err)
	}
	defer f.Close()
	secret, err := io.ReadAll(io.LimitReader(f, maxSecretSize+1))
	if err != nil {
		return nil, fmt.Errorf("read memberlist secret %s: %w", path, err)
	}
	key, err := KeyFromSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("memberlist secret %s: %w", path, err)
	}
	return key, nil
}

// KeyFromSecret turns a memberlist secret of any length into a 32-byte
// AES-256 key the way MetalLB's speaker does: the secret's bytes followed
// by the SHA-256 digest of nothing (the constant e3b0c442...b855),
// truncated to 32 bytes. So a secret of 32 bytes or more contributes its
// first 32 bytes (the usual `openssl rand -base64 128` secret gives its
// first 32 characters), and a shorter one is padded with that constant.
// It is not a key-derivation function, only compatibility: a secret that
// is short or low in entropy gives a weak key.
func KeyFromSecret(secret []byte) ([]byte, error) {
	switch {
	case len(secret) == 0:
		return nil, ErrEmptySecret
	case len(secret) > maxSecretSize:
		return nil, ErrSecretTooLarge
	}
	empty := sha256.Sum256(nil)
	key := make([]byte, 32)
	n := copy(key, secret)
	copy(key[n:], empty[:])
	return key, nil
}
