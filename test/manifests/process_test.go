package manifests

import (
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// startController starts the controller binary with args plus a probe
// address of its own, and waits until it reports ready. With leader
// election a standby is ready too, so callers wait for the effects they
// need. The process is killed when the test ends.
func startController(t *testing.T, args ...string) *proc.Process {
	t.Helper()
	probe := proc.FreeAddr(t)
	p := proc.Start(t, binary, append(args, "--health-probe-bind-address", probe)...)
	alive, cancel := p.Alive(ctx) // a controller that exits ends the wait at once
	defer cancel()
	if err := testenv.WaitReady(alive, "http://"+probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("controller never became ready: %v\n%s", err, p.Output())
	}
	return p
}

// hasEvent reports whether an event with reason is recorded about the
// object. Core and events.k8s.io events are one resource, so this sees
// events written through either API.
func hasEvent(c client.Client, ns, kind, name, reason string) bool {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}

func containsFold(s, substr string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(substr))
}
