package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadylb/steadylb/internal/speaker/membership"
)

// keyPoll is how often a speaker looks at the mounted memberlist Secret.
// The kubelet rewrites a Secret volume within about a minute of a change;
// reading one small file a second adds nothing to that and needs no
// inotify on the kubelet's symlink swaps.
const keyPoll = time.Second

// keyWaitLogEvery repeats the "waiting" line, so that it is in the recent
// log of a speaker that waits for long.
const keyWaitLogEvery = time.Minute

// waitForKey returns the memberlist key at path (nil without a path). When
// the mounted Secret has no key yet (no file, or an empty one: the shipped
// Secret has none until the controller writes it), it waits instead of
// failing, and meanwhile serves the probes on probeAddr itself: /healthz
// passes (nothing is wrong with the process, so the kubelet must not
// restart it) and /readyz fails with the reason. Nothing else runs: no
// membership (a speaker without the key cannot talk to those that have
// it, and would take itself for alone) and no answers. It returns the
// context's error if ctx ends first, and an error at once when the file
// exists but cannot be used.
func waitForKey(ctx context.Context, log logr.Logger, path, probeAddr string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	key, err := membership.ReadSecretKey(path)
	if err == nil || !membership.KeyPending(err) {
		return key, wrapKeyErr(err)
	}
	waiting := []any{"path", path, "reason", err.Error()}
	log.Info("waiting for the memberlist key: the mounted Secret has none yet; the controller writes one (--ml-secret-name) "+
		"and the kubelet updates the volume within about a minute. Until then this speaker joins no one and answers nothing",
		waiting...)
	stop, err := serveWaitingProbes(log, probeAddr, path)
	if err != nil {
		return nil, err
	}
	defer stop()
	since := time.Now()
	tick := time.NewTicker(keyPoll)
	defer tick.Stop()
	lastLog := since
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case now := <-tick.C:
			key, err := membership.ReadSecretKey(path)
			switch {
			case err == nil:
				log.Info("the memberlist key is there; starting", "path", path, "waited", time.Since(since).Round(time.Second).String())
				return key, nil
			case !membership.KeyPending(err):
				return nil, wrapKeyErr(err)
			case now.Sub(lastLog) >= keyWaitLogEvery:
				lastLog = now
				log.Info("still waiting for the memberlist key", append(waiting, "waited", now.Sub(since).Round(time.Second).String())...)
			}
		}
	}
}

func wrapKeyErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("--ml-secret-key-path: %w", err)
}

// serveWaitingProbes answers the kubelet's probes while the speaker waits
// for its key; stop closes the listener, so the manager can take the same
// address afterwards.
func serveWaitingProbes(log logr.Logger, addr, path string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "waiting for the memberlist key in "+path, http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "probe server while waiting for the memberlist key")
		}
	}()
	return func() {
		_ = srv.Close() // closes the listener; in-flight probes are cut, the kubelet retries
		<-done
	}, nil
}

// keyWatcher follows the mounted memberlist Secret once the speaker runs:
// when the key in it changes (a key rotated, or a Secret re-created with a
// new one), it moves the membership to the new key, one step per read
// (membership.Members.UseSecretKey says which steps, and why the cluster
// never splits). A key that vanishes from the volume is not a reason to
// stop gossiping: the one in use is kept. It is a manager.Runnable.
type keyWatcher struct {
	log  logr.Logger
	path string
	// inUse is the key the membership started with.
	inUse []byte
	// use takes one step towards key and reports whether it is done.
	use func(key []byte) (bool, error)
}

var _ manager.Runnable = (*keyWatcher)(nil)

func (w *keyWatcher) Start(ctx context.Context) error {
	tick := time.NewTicker(keyPoll)
	defer tick.Stop()
	want, done, gone := w.inUse, true, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		key, err := membership.ReadSecretKey(w.path)
		switch {
		case membership.KeyPending(err):
			if !gone {
				w.log.Info("the memberlist key is gone from the mounted Secret; keeping the one in use", "path", w.path)
			}
			gone = true
			continue
		case err != nil:
			w.log.Error(err, "read the memberlist key; keeping the one in use", "path", w.path)
			continue
		}
		gone = false
		if !bytes.Equal(key, want) {
			w.log.Info("the memberlist key changed; moving the membership to it", "path", w.path)
			want, done = key, false
		}
		if done {
			continue
		}
		if done, err = w.use(want); err != nil {
			w.log.Error(err, "move the membership to the new memberlist key; trying again", "path", w.path)
		}
	}
}
