package bgp_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// These tests never make a first Update, so no session dials; the
// sessions against a real router are in test/bgp.

func newSessions(t *testing.T, reg prometheus.Registerer) *bgp.Sessions {
	t.Helper()
	// A BFD manager of our own that never starts: no socket is opened.
	s, err := bgp.New(testr.New(t), bgp.Options{Registerer: reg, NodeAddress: netip.MustParseAddr("198.51.100.2"),
		BFD: bfd.NewManager(testr.New(t), bfd.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func session(name string) bgp.Session {
	return bgp.Session{Name: name, MyASN: 64501, PeerASN: 64500, Address: netip.MustParseAddr("198.51.100.1")}
}

func TestSetSessions(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	s := newSessions(t, reg)

	bad, worse := session("bad"), session("external")
	bad.MyASN = 0
	// A reason that quotes a valid session's name must not refuse it.
	worse.PeerASN, worse.DynamicASN = 0, "a"
	err := s.SetSessions(ctx, []bgp.Session{session("a"), bad, worse})
	if !errors.Is(err, bgp.ErrSession) {
		t.Fatalf("SetSessions with invalid sessions: %v, want ErrSession", err)
	}
	if got := bgp.RefusedSessions(err); !slices.Equal(got, []string{"bad", "external"}) {
		t.Errorf("RefusedSessions(%v) = %q, want bad and external", err, got)
	}
	err = s.SetSessions(ctx, []bgp.Session{session("a"), session("a")})
	if !errors.Is(err, bgp.ErrSession) {
		t.Fatalf("SetSessions with a name twice: %v, want ErrSession", err)
	}
	if got := bgp.RefusedSessions(fmt.Errorf("wrapped: %w", err)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("RefusedSessions(%v) = %q, want a", err, got)
	}
	if n := testutil.CollectAndCount(reg, "metallb_bgp_session_up"); n != 0 {
		t.Fatalf("%d sessions after failed calls, want none", n)
	}
	if err := s.SetSessions(ctx, []bgp.Session{session("a"), session("b")}); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "metallb_bgp_session_up"); n != 1 {
		// Both go to one router: one series.
		t.Errorf("%d session_up series, want 1", n)
	}
	if up := s.Established(); len(up) != 0 {
		t.Errorf("established before any Update: %v", up)
	}
	if err := s.Update(ctx, "c", nil, nil); !errors.Is(err, bgp.ErrNoSession) {
		t.Errorf("Update of an unknown session: %v, want ErrNoSession", err)
	}
	if err := s.SetSessions(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "metallb_bgp_session_up"); n != 0 {
		t.Errorf("%d session_up series after removing every session", n)
	}
}

func TestStartStops(t *testing.T) {
	s := newSessions(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.SetSessions(ctx, []bgp.Session{session("a")}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its context ended")
	}
	if err := s.SetSessions(context.Background(), []bgp.Session{session("a")}); !errors.Is(err, bgp.ErrStopped) {
		t.Errorf("SetSessions after Start ended: %v, want ErrStopped", err)
	}
}
