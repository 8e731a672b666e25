package mlsecret_test

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/steadylb/steadylb/internal/mlsecret"
	"github.com/steadylb/steadylb/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// secretName gives each test its own Secret in the shared namespace.
func secretName(t *testing.T) types.NamespacedName {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, "ml-"+strings.ToLower(t.Name()))
	return types.NamespacedName{Namespace: testenv.Namespace, Name: strings.Trim(name[:min(len(name), 63)], "-")}
}

func filler(t *testing.T, key types.NamespacedName) *mlsecret.Filler {
	c := testenv.Shared.Client
	return &mlsecret.Filler{Reader: c, Writer: c, Key: key, Log: testr.New(t)}
}

func get(t *testing.T, key types.NamespacedName) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := testenv.Shared.Client.Get(context.Background(), key, &s); err != nil {
		t.Fatalf("get Secret %s: %v", key, err)
	}
	return &s
}

// checkKey fails unless key is 32 base64 characters of 24 bytes.
func checkKey(t *testing.T, key []byte) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(string(key))
	if len(key) != 32 || err != nil || len(raw) != 24 {
		t.Fatalf("key %q: want 32 base64 characters of 24 bytes (decode error %v)", key, err)
	}
}

// TestEnsure covers each state the Secret can be found in.
func TestEnsure(t *testing.T) {
	tests := []struct {
		name     string
		existing *corev1.Secret // nil: no Secret
		want     mlsecret.Outcome
		// keep is data that must be there afterwards, unchanged.
		keep map[string]string
	}{
		{name: "missing", want: mlsecret.Created},
		{name: "shipped without data", existing: &corev1.Secret{Type: corev1.SecretTypeOpaque}, want: mlsecret.Filled},
		{name: "empty key, other data kept", existing: &corev1.Secret{Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{mlsecret.KeyName: {}, "note": []byte("x")}}, want: mlsecret.Filled, keep: map[string]string{"note": "x"}},
		{name: "a user's key is never replaced", existing: &corev1.Secret{Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{mlsecret.KeyName: []byte("short")}}, want: mlsecret.Kept, keep: map[string]string{mlsecret.KeyName: "short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			key := secretName(t)
			c := testenv.Shared.Client
			var before string
			if tt.existing != nil {
				s := tt.existing.DeepCopy()
				s.ObjectMeta = metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
				if err := c.Create(ctx, s); err != nil {
					t.Fatalf("create Secret: %v", err)
				}
				before = s.ResourceVersion
			}
			t.Cleanup(func() {
				_ = c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
			})

			got, err := filler(t, key).Ensure(ctx)
			if err != nil || got != tt.want {
				t.Fatalf("Ensure = %v, %v; want %v", got, err, tt.want)
			}
			s := get(t, key)
			for k, v := range tt.keep {
				if string(s.Data[k]) != v {
					t.Errorf("data %q = %q, want %q kept", k, s.Data[k], v)
				}
			}
			if tt.want == mlsecret.Kept {
				if s.ResourceVersion != before {
					t.Errorf("a Secret with a key was written (resourceVersion %s -> %s)", before, s.ResourceVersion)
				}
				return
			}
			checkKey(t, s.Data[mlsecret.KeyName])

			// A second pass finds the key and keeps it.
			again, err := filler(t, key).Ensure(ctx)
			if err != nil || again != mlsecret.Kept {
				t.Fatalf("second Ensure = %v, %v; want kept", again, err)
			}
			if after := get(t, key); string(after.Data[mlsecret.KeyName]) != string(s.Data[mlsecret.KeyName]) {
				t.Errorf("the key changed on the second pass")
			}
		})
	}
}

// TestEnsureRace runs several fillers at once on a missing Secret, as two
// controllers would during a leader handover with a stale lease: one key
// wins, every filler ends without error, and the key is the one that stays.
func TestEnsureRace(t *testing.T) {
	ctx := context.Background()
	key := secretName(t)
	c := testenv.Shared.Client
	t.Cleanup(func() {
		_ = c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	})
	const n = 4
	outcomes := make([]mlsecret.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outcomes[i], errs[i] = filler(t, key).Ensure(ctx) })
	}
	wg.Wait()
	wrote := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("filler %d: %v", i, errs[i])
		}
		if outcomes[i] != mlsecret.Kept {
			wrote++
		}
	}
	if wrote != 1 {
		t.Errorf("%d fillers wrote a key (%v), want exactly 1", wrote, outcomes)
	}
	checkKey(t, get(t, key).Data[mlsecret.KeyName])
}

// TestStartRefills deletes the Secret under a running Filler and expects it
// back with a new key at the next check.
func TestStartRefills(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	key := secretName(t)
	c := testenv.Shared.Client
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	})
	f := filler(t, key)
	f.Interval = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()

	first := waitKey(t, key, nil)
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatalf("delete Secret: %v", err)
	}
	second := waitKey(t, key, first)
	checkKey(t, second)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v after its context ended, want nil", err)
	}
}

// waitKey waits until the Secret holds a key other than old.
func waitKey(t *testing.T, key types.NamespacedName, old []byte) []byte {
	t.Helper()
	var got []byte
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		err := testenv.Shared.Client.Get(ctx, key, &s)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		got = s.Data[mlsecret.KeyName]
		return len(got) > 0 && string(got) != string(old), nil
	})
	if err != nil {
		t.Fatalf("Secret %s never got a new key: %v", key, err)
	}
	return got
}
