package bgppasswords

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta2"
)

// getCounter answers Gets from a map of Secrets (a missing one is
// NotFound, down makes every Get fail) and counts them per name. Only the
// schedule of reads is under test here; test/speaker reads real Secrets
// from the API server as the speaker's own ServiceAccount.
type getCounter struct {
	secrets map[string]*corev1.Secret
	down    bool
	gets    map[string]int
}

func (g *getCounter) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	g.gets[key.Name]++
	if g.down {
		return errors.New("connection refused")
	}
	s, ok := g.secrets[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	*obj.(*corev1.Secret) = *s
	return nil
}

func (g *getCounter) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the speaker must never list Secrets")
}

func TestPasswordsSchedule(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	g := &getCounter{secrets: map[string]*corev1.Secret{"a": {Type: corev1.SecretTypeBasicAuth}}, gets: map[string]int{}}
	p := New(g, "metallb-system", logr.Discard())
	p.now = func() time.Time { return clock }
	ctx := context.Background()
	read := func(force bool, names ...string) ([]string, time.Duration) {
		t.Helper()
		secrets, next := p.Read(ctx, names, force)
		var got []string
		for n := range secrets {
			got = append(got, n)
		}
		slices.Sort(got)
		return got, next
	}
	step := func(what string, wantGets map[string]int, wantNext time.Duration, got []string, next time.Duration, want ...string) {
		t.Helper()
		if diff := cmp.Diff(wantGets, g.gets); diff != "" {
			t.Errorf("%s: GETs per Secret (-want +got):\n%s", what, diff)
		}
		if next != wantNext {
			t.Errorf("%s: next read in %v, want %v", what, next, wantNext)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Secrets (-want +got):\n%s", what, diff)
		}
	}

	got, next := read(false, "a")
	step("first read", map[string]int{"a": 1}, passwordRefresh, got, next, "a")
	clock = clock.Add(time.Minute)
	got, next = read(false, "a")
	step("not due: no GET", map[string]int{"a": 1}, passwordRefresh-time.Minute, got, next, "a")
	got, next = read(true, "a")
	step("the configuration changed: read again", map[string]int{"a": 2}, passwordRefresh, got, next, "a")

	got, next = read(false, "a", "b")
	step("a missing Secret is retried after 1s", map[string]int{"a": 2, "b": 1}, time.Second, got, next, "a")
	for _, wait := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		clock = clock.Add(next)
		gets := g.gets["b"]
		got, next = read(false, "a", "b")
		step("backoff", map[string]int{"a": 2, "b": gets + 1}, wait, got, next, "a")
	}
	g.secrets["b"] = &corev1.Secret{Type: corev1.SecretTypeBasicAuth}
	clock = clock.Add(next)
	got, _ = read(false, "a", "b")
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("b created: found at its next retry (-want +got):\n%s", diff)
	}

	g.down = true
	clock = clock.Add(passwordRefresh)
	got, next = read(false, "a", "b")
	step("API server down: the last Secrets are kept", map[string]int{"a": 3, "b": g.gets["b"]}, time.Second, got, next, "a", "b")
	if len(got) != 2 {
		t.Errorf("with the API server down: Secrets %v, want a and b kept", got)
	}
	g.down = false

	got, _ = read(false, "b")
	if _, known := p.got["a"]; known || len(got) != 1 {
		t.Errorf("a Secret no longer named is still remembered (%v)", got)
	}
}

func TestSecretNames(t *testing.T) {
	peer := func(secret string) v1beta2.BGPPeer {
		var p v1beta2.BGPPeer
		p.Spec.PasswordSecret.Name = secret
		return p
	}
	got := SecretNames([]v1beta2.BGPPeer{peer("b"), peer(""), peer("a"), peer("b")})
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("SecretNames (-want +got):\n%s", diff)
	}
}
