package controller

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

// eventLane sends the controller's events in a lane of their own, behind
// the status writes: an event costs the API server about what a status
// write costs, and during a burst of assignments (a restart after an
// outage, a namespace of Services applied at once) sending both would
// halve the rate at which Services get their addresses. While the
// controller has written a status in the last moment, events leave at a
// trickle; once it is quiet, all that waited go at once. The condition on
// each Service says the same thing as its event, without delay.
//
// Queued events hold a reference to their Service, not the Service.
type eventLane struct {
	next events.EventRecorder
	// busyFor is how long after a status write the lane counts as busy.
	busyFor time.Duration
	trickle *rate.Limiter

	mu        sync.Mutex
	queue     []queuedEvent
	lastWrite time.Time
	wake      chan struct{}
}

type queuedEvent struct {
	regarding         *corev1.ObjectReference
	kind, reason, msg string
}

// maxQueuedEvents bounds the memory waiting events take; beyond it the
// oldest are dropped, as client-go's broadcaster drops what overflows.
const maxQueuedEvents = 50_000

func newEventLane(next events.EventRecorder) *eventLane {
	return &eventLane{next: next, busyFor: 200 * time.Millisecond,
		trickle: rate.NewLimiter(rate.Limit(10), 10), wake: make(chan struct{}, 1)}
}

// busy records a status write.
func (l *eventLane) busy() {
	l.mu.Lock()
	l.lastWrite = time.Now()
	l.mu.Unlock()
}

// add queues an event about a Service.
func (l *eventLane) add(svc *corev1.Service, kind, reason, msg string) {
	ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: svc.Namespace, Name: svc.Name,
		UID: svc.UID, ResourceVersion: svc.ResourceVersion}
	l.mu.Lock()
	if len(l.queue) >= maxQueuedEvents {
		l.queue = l.queue[1:]
	}
	l.queue = append(l.queue, queuedEvent{ref, kind, reason, msg})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Start sends queued events until ctx ends; it is a manager Runnable that
// runs on every replica (a standby queues nothing).
func (l *eventLane) Start(ctx context.Context) error {
	for {
		ev, wait, ok := l.next1()
		switch {
		case ok:
			l.next.Eventf(ev.regarding, nil, ev.kind, ev.reason, "Allocate", "%s", ev.msg)
			continue
		case wait > 0:
			select {
			case <-time.After(wait):
			case <-l.wake:
			case <-ctx.Done():
				return nil
			}
		default:
			select {
			case <-l.wake:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// next1 takes the next event to send now, or says how long to wait for
// one (0: until something is queued).
func (l *eventLane) next1() (queuedEvent, time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return queuedEvent{}, 0, false
	}
	if quiet := time.Since(l.lastWrite); quiet < l.busyFor {
		if r := l.trickle.Reserve(); r.Delay() > 0 {
			r.Cancel()
			return queuedEvent{}, min(r.Delay(), l.busyFor-quiet), false
		}
	}
	ev := l.queue[0]
	l.queue[0] = queuedEvent{}
	l.queue = l.queue[1:]
	return ev, 0, true
}
