package mlsecret

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// KeyName is the key of the Secret's data the speakers read (MetalLB's).
const KeyName = "secretkey"

// keyBytes random bytes make 32 base64 characters, the length of the AES
// key the speaker takes from the secret.
const keyBytes = 24

// DefaultInterval is how often the leader checks the Secret again, for a
// Secret deleted or emptied after it was filled.
const DefaultInterval = 5 * time.Minute

// Outcome is what Ensure did.
type Outcome int

const (
	// Kept: the Secret has a key; nothing was written.
	Kept Outcome = iota
	// Created: there was no Secret; one was created with a key.
	Created
	// Filled: the Secret had no key, or an empty one; a key was added.
	Filled
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Filled:
		return "filled"
	default:
		return "kept"
	}
}

// Filler keeps the memberlist Secret supplied with a key. It is a
// manager.Runnable for the leader: Start checks at once and then every
// Interval until ctx ends.
type Filler struct {
	// Reader reads the Secret from the API server; it must not be a cache
	// (the manager's APIReader), or every Secret would be watched.
	Reader client.Reader
	// Writer creates and updates it.
	Writer client.Writer
	// Key names the Secret.
	Key types.NamespacedName
	// Log receives one line per key written and per failure.
	Log logr.Logger
	// Interval between checks; DefaultInterval when zero.
	Interval time.Duration
	// Rand is the source of keys; crypto/rand when nil.
	Rand io.Reader
}

var (
	_ manager.Runnable               = (*Filler)(nil)
	_ manager.LeaderElectionRunnable = (*Filler)(nil)
)

// NeedLeaderElection keeps two replicas from writing two different keys.
func (f *Filler) NeedLeaderElection() bool { return true }

// Start checks the Secret now and then every Interval. A failed check is
// logged and retried with a backoff (1s doubling up to a minute), so a
// missing permission or an unreachable API server shows in the log and
// heals by itself. It returns nil when ctx ends.
func (f *Filler) Start(ctx context.Context) error {
	interval := f.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 7, Cap: time.Minute}
	for {
		next := interval
		if _, err := f.Ensure(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			next = backoff.Step()
			f.Log.Error(err, "could not give the memberlist Secret a key; retrying", "secret", f.Key.String(), "retryIn", next.String())
		} else {
			backoff = wait.Backoff{Duration: time.Second, Factor: 2, Steps: 7, Cap: time.Minute}
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Ensure makes sure the Secret exists with a non-empty key and says what
// it did. A Secret with a key is never written. A write that conflicts
// with another (someone created or filled it meanwhile) is read again, so
// a key written by someone else always wins over ours.
func (f *Filler) Ensure(ctx context.Context) (Outcome, error) {
	for range 3 {
		outcome, err := f.ensureOnce(ctx)
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue
		}
		return outcome, err
	}
	return Kept, fmt.Errorf("memberlist Secret %s: changed by someone else on every try", f.Key)
}

func (f *Filler) ensureOnce(ctx context.Context) (Outcome, error) {
	var s corev1.Secret
	err := f.Reader.Get(ctx, f.Key, &s)
	switch {
	case apierrors.IsNotFound(err):
		return f.create(ctx)
	case err != nil:
		return Kept, fmt.Errorf("read memberlist Secret %s: %w", f.Key, err)
	case len(s.Data[KeyName]) > 0:
		return Kept, nil
	}
	key, err := f.newKey()
	if err != nil {
		return Kept, err
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[KeyName] = key
	// Update carries the resourceVersion read above: if the Secret changed
	// since, the API server refuses and the next try reads it again.
	if err := f.Writer.Update(ctx, &s); err != nil {
		return Kept, fmt.Errorf("write a key into memberlist Secret %s: %w", f.Key, err)
	}
	f.Log.Info("the memberlist Secret had no key: wrote one; the speakers pick it up once the kubelet updates their volume",
		"secret", f.Key.String())
	return Filled, nil
}

func (f *Filler) create(ctx context.Context) (Outcome, error) {
	key, err := f.newKey()
	if err != nil {
		return Kept, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Key.Namespace, Name: f.Key.Name,
			Labels: map[string]string{"app": "metallb", "component": "speaker"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KeyName: key},
	}
	if err := f.Writer.Create(ctx, s); err != nil {
		return Kept, fmt.Errorf("create memberlist Secret %s: %w", f.Key, err)
	}
	f.Log.Info("created the memberlist Secret with a new key", "secret", f.Key.String())
	return Created, nil
}

// newKey returns 32 base64 characters of fresh random bytes.
func (f *Filler) newKey() ([]byte, error) {
	src := f.Rand
	if src == nil {
		src = rand.Reader
	}
	raw := make([]byte, keyBytes)
	if _, err := io.ReadFull(src, raw); err != nil {
		return nil, fmt.Errorf("make a memberlist key: %w", err)
	}
	key := make([]byte, base64.StdEncoding.EncodedLen(keyBytes))
	base64.StdEncoding.Encode(key, raw)
	return key, nil
}
