package main

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder notes the shutdown steps in the order they happen.
type recorder struct {
	mu    sync.Mutex
	steps []string
}

func (r *recorder) note(step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, step)
}

// fakeAnnouncer answers until its context ends, like layer2.Announcer.
type fakeAnnouncer struct{ rec *recorder }

func (a fakeAnnouncer) Start(ctx context.Context) error {
	a.rec.note("answering")
	<-ctx.Done()
	a.rec.note("stopped answering")
	return nil
}

func TestStopThenLeaveOrder(t *testing.T) {
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r := stopThenLeave{announcer: fakeAnnouncer{rec: rec}, leave: func() { rec.note("left") }}
	go func() { done <- r.Start(ctx) }()
	cancel() // SIGTERM
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if diff := cmp.Diff([]string{"answering", "stopped answering", "left"}, rec.steps); diff != "" {
		t.Errorf("shutdown steps (-want +got):\n%s", diff)
	}
}

func TestAdvertiseAddr(t *testing.T) {
	for _, tc := range []struct {
		name, bind, host, want string
	}{
		{name: "specific bind address is advertised by memberlist itself", bind: "198.51.100.1", host: "198.51.100.2", want: ""},
		{name: "no bind address: the host", bind: "", host: "198.51.100.2", want: "198.51.100.2"},
		{name: "wildcard bind address: the host", bind: "0.0.0.0", host: "2001:db8::2", want: "2001:db8::2"},
		{name: "no usable host: memberlist decides", bind: "", host: "node-1.example", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := advertiseAddr(flags{mlBindAddr: tc.bind, host: tc.host})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("advertiseAddr (-want +got):\n%s", diff)
			}
		})
	}
}
