package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
)

// TestEventLaneHoldsEventsWhileWriting: while statuses are being written
// only the trickle's events go out; once quiet, every queued event goes,
// in order.
func TestEventLaneHoldsEventsWhileWriting(t *testing.T) {
	rec := events.NewFakeRecorder(100)
	lane := newEventLane(rec)
	lane.busyFor = time.Hour
	lane.trickle = rate.NewLimiter(0, 3) // three while busy, then none
	lane.busy()
	for i := range 20 {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("svc-", i)}}
		lane.add(svc, corev1.EventTypeNormal, EventIPAllocated, fmt.Sprint("event ", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = lane.Start(ctx) }()

	var got []string
	receive := func(n int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for {
				select {
				case e := <-rec.Events:
					got = append(got, e)
				default:
					return len(got) >= n, nil
				}
			}
		})
		if err != nil {
			t.Fatalf("received %d events, want %d: %v", len(got), n, err)
		}
	}
	receive(3)
	lane.mu.Lock()
	held := len(lane.queue)
	lane.lastWrite = time.Time{} // quiet from now on
	lane.mu.Unlock()
	if held != 17 {
		t.Fatalf("%d events held while busy, want 17", held)
	}
	lane.add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wake"}}, corev1.EventTypeNormal, EventIPAllocated, "event 20")
	receive(21)
	for i, e := range got {
		if want := fmt.Sprintf("Normal IPAllocated event %d", i); e != want {
			t.Errorf("event %d = %q, want %q", i, e, want)
		}
	}
}
