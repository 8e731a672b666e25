package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/steadylb/steadylb/test/kubeletvol"
	"github.com/steadylb/steadylb/test/proc"
)

// secret is a memberlist secret longer than the 32 bytes the key takes.
var secret = []byte("0123456789abcdef0123456789abcdefXYZ")

func TestWaitForKeyAtOnce(t *testing.T) {
	dir := t.TempDir()
	if _, err := kubeletvol.New(dir, map[string][]byte{"secretkey": secret}); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(t.TempDir(), "secretkey")
	if err := os.WriteFile(huge, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		wantKey []byte
		wantErr bool
	}{
		{name: "no path, no encryption", path: ""},
		{name: "mounted Secret with a key", path: dir, wantKey: secret[:32]},
		{name: "the file itself", path: filepath.Join(dir, "secretkey"), wantKey: secret[:32]},
		{name: "a file that cannot be a key fails at once", path: huge, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No probe address can be taken: none of these waits.
			key, err := waitForKey(context.Background(), testr.New(t), tc.path, "256.0.0.1:0")
			if (err != nil) != tc.wantErr {
				t.Fatalf("waitForKey(%q) error = %v, want error %v", tc.path, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantKey, key); diff != "" {
				t.Errorf("key (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitForKeyUntilWritten starts with the volume of a Secret without
// data, as shipped, and with an empty key, and writes the key the way the
// kubelet would: the speaker waits with its liveness passing and its
// readiness failing, then returns the key and frees the probe address.
func TestWaitForKeyUntilWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial map[string][]byte
	}{{"no data", nil}, {"empty key", map[string][]byte{"secretkey": {}}}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			vol, err := kubeletvol.New(dir, tc.initial)
			if err != nil {
				t.Fatal(err)
			}
			addr := proc.FreeAddr(t)
			type result struct {
				key []byte
				err error
			}
			done := make(chan result, 1)
			go func() {
				key, err := waitForKey(context.Background(), testr.New(t), dir, addr)
				done <- result{key, err}
			}()
			waitStatus(t, "http://"+addr+"/readyz", http.StatusServiceUnavailable, "waiting for the memberlist key")
			waitStatus(t, "http://"+addr+"/healthz", http.StatusOK, "ok")
			select {
			case r := <-done:
				t.Fatalf("waitForKey returned before there was a key: %v, %v", r.key, r.err)
			default:
			}
			if err := vol.Update(map[string][]byte{"secretkey": secret}); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || string(r.key) != string(secret[:32]) {
				t.Fatalf("waitForKey = %q, %v; want the key", r.key, r.err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("the probe address is still taken after the wait: %v", err)
			}
			ln.Close()
		})
	}
}

func TestWaitForKeyStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	addr := proc.FreeAddr(t)
	go func() {
		_, err := waitForKey(ctx, testr.New(t), t.TempDir(), addr)
		done <- err
	}()
	waitStatus(t, "http://"+addr+"/readyz", http.StatusServiceUnavailable, "waiting")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waitForKey after cancel = %v, want context.Canceled", err)
	}
}

// waitStatus polls url until it answers code with a body containing want.
func waitStatus(t *testing.T, url string, code int, want string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		last = resp.Status + ": " + string(body)
		return resp.StatusCode == code && strings.Contains(string(body), want), nil
	})
	if err != nil {
		t.Fatalf("%s never answered %d %q; last: %s", url, code, want, last)
	}
}

// TestKeyWatcherFollowsTheSecret: a new key in the volume is handed to the
// membership until it says the move is done, then nothing more; a key
// that vanishes leaves the one in use alone.
func TestKeyWatcherFollowsTheSecret(t *testing.T) {
	dir := t.TempDir()
	first := []byte("0123456789abcdef0123456789abcdef")
	vol, err := kubeletvol.New(dir, map[string][]byte{"secretkey": first})
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan string, 100)
	steps := 0
	w := &keyWatcher{log: testr.New(t), path: dir, inUse: first, use: func(key []byte) (bool, error) {
		steps++
		calls <- string(key)
		return steps%3 == 0, nil // three steps to move
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	next := func() string {
		t.Helper()
		select {
		case k := <-calls:
			return k
		case <-time.After(30 * time.Second):
			t.Fatal("the watcher never handed the membership a key")
			return ""
		}
	}

	second := []byte("fedcba9876543210fedcba9876543210")
	if err := vol.Update(map[string][]byte{"secretkey": second}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := next(); got != string(second) {
			t.Fatalf("handed %q, want the new key", got)
		}
	}
	// Gone from the volume: nothing to do; then a third key.
	if err := vol.Update(nil); err != nil {
		t.Fatal(err)
	}
	third := []byte("abcdefabcdefabcdefabcdefabcdefab")
	if err := vol.Update(map[string][]byte{"secretkey": third}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != string(third) {
		t.Fatalf("after the key was done, handed %q, want only the third key", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
}
