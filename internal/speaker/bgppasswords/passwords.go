package bgppasswords

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta2"
)

// The speaker may only get a Secret by name, never list
// or watch them (a list would hand every node every Secret of the
// namespace, the memberlist key included; RBAC cannot narrow a list to the
// Secrets the BGPPeers name, since those names are not known when the
// Role is written). So each Secret a BGPPeer names is fetched with one
// GET, and fetched again:
//
//   - whenever the configuration changes (a BGPPeer edited, or labelled, is
//     how to make the speakers read a rotated password at once);
//   - passwordRefresh after the last read, for a rotation nobody signals:
//     each speaker makes one GET per named Secret per interval, so 1,000
//     nodes with two Secrets make about 7 GETs a second in all;
//   - sooner (1s, doubling up to a minute) while a Secret is missing or
//     cannot be read, so a Secret created after its peer is found quickly.
//
// A Secret that is missing makes the peer invalid with a clear error (the
// ConfigurationState names the peer, the field and the Secret), as it did
// when the Secrets were listed; one that cannot be read (the API server
// unreachable) keeps its last value, so a blip closes no session.
const (
	passwordRefresh  = 5 * time.Minute
	passwordRetryMin = time.Second
	passwordRetryMax = time.Minute
	passwordTimeout  = 10 * time.Second
)

// Passwords fetches and remembers the Secrets the BGPPeers name. It is
// not safe for concurrent use: the speaker's loop goroutine owns it.
type Passwords struct {
	reader    client.Reader // the API server, not a cache
	namespace string
	log       logr.Logger
	now       func() time.Time
	got       map[string]fetched
}

// fetched is the last read of one Secret.
type fetched struct {
	secret *corev1.Secret // nil: not found, or never read
	at     time.Time
	// retry is the wait before the next read: passwordRefresh after a
	// success, a doubling backoff after a failure.
	retry time.Duration
}

// New returns Passwords that read the Secrets of namespace from reader,
// which should be the API server, not a cache: the speaker may not watch
// Secrets.
func New(reader client.Reader, namespace string, log logr.Logger) *Passwords {
	return &Passwords{reader: reader, namespace: namespace, log: log, now: time.Now, got: map[string]fetched{}}
}

// SecretNames are the Secrets the peers name, sorted, without repeats.
func SecretNames(peers []v1beta2.BGPPeer) []string {
	var names []string
	for i := range peers {
		if n := peers[i].Spec.PasswordSecret.Name; n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Read returns the named Secrets that exist, reading from the API server
// those never read, due again, or all of them when force is set. next is
// when the earliest of them is due again (0 with no names). Secrets no
// longer named are forgotten.
func (p *Passwords) Read(ctx context.Context, names []string, force bool) (secrets map[string]corev1.Secret, next time.Duration) {
	now := p.now()
	for name := range p.got {
		if !slices.Contains(names, name) {
			delete(p.got, name)
		}
	}
	for _, name := range names {
		f, known := p.got[name]
		if !known || force || now.Sub(f.at) >= f.retry {
			p.got[name] = p.fetch(ctx, name, f, now)
		}
	}
	for _, name := range names {
		f := p.got[name]
		if f.secret != nil {
			if secrets == nil {
				secrets = map[string]corev1.Secret{}
			}
			secrets[name] = *f.secret
		}
		if due := f.retry - now.Sub(f.at); next == 0 || due < next {
			next = max(due, passwordRetryMin)
		}
	}
	return secrets, next
}

func (p *Passwords) fetch(ctx context.Context, name string, last fetched, now time.Time) fetched {
	ctx, cancel := context.WithTimeout(ctx, passwordTimeout)
	defer cancel()
	var s corev1.Secret
	err := p.reader.Get(ctx, types.NamespacedName{Namespace: p.namespace, Name: name}, &s)
	backoff := min(max(2*last.retry, passwordRetryMin), passwordRetryMax)
	if last.retry >= passwordRefresh {
		backoff = passwordRetryMin // the first failure after a success
	}
	switch {
	case err == nil:
		return fetched{secret: &s, at: now, retry: passwordRefresh}
	case apierrors.IsNotFound(err):
		if last.secret != nil {
			p.log.Info("a BGP password Secret is gone", "secret", name)
		}
		return fetched{at: now, retry: backoff}
	default:
		p.log.Error(err, "could not read a BGP password Secret; keeping the last one read", "secret", name,
			"retryIn", backoff.String())
		return fetched{secret: last.secret, at: now, retry: backoff}
	}
}

// Prints name each Secret read and its version, so a changed or vanished
// Secret changes the configuration's fingerprint.
func Prints(secrets map[string]corev1.Secret) []string {
	parts := make([]string, 0, len(secrets))
	for name, s := range secrets {
		// Secrets have no generation: their resourceVersion changes with
		// their data.
		parts = append(parts, fmt.Sprintf("Secret/%s/%s/%s", name, s.UID, s.ResourceVersion))
	}
	return parts
}
