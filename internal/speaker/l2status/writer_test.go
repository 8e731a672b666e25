package l2status

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestReportWhileTheObjectIsLost: the speaker's cache tells the Writer
// that its object was deleted (Lost) from another goroutine, at any moment
// of a Report: another node deletes the objects of a node it took over
// from, and the delete event may arrive while this node writes again. Once
// that crashed the speaker (a nil object between the claim and the status
// write). Here Lost runs in a tight loop while Report is called again and
// again; every Report must succeed and leave an object that lists the
// address.
func TestReportWhileTheObjectIsLost(t *testing.T) {
	ctx := context.Background()
	c := testenv.Shared.Client
	node := "node-lost"
	w := NewWriter(c, Options{Namespace: testenv.Namespace, Node: node})
	svc := types.NamespacedName{Namespace: "default", Name: "lost"}
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.7")}
	t.Cleanup(func() {
		if err := c.DeleteAllOf(ctx, &v1beta1.ServiceL2Status{}, client.InNamespace(testenv.Namespace),
			client.MatchingLabels{v1beta1.LabelNode: node}); err != nil {
			t.Errorf("delete the test's objects: %v", err)
		}
	})

	done := make(chan struct{})
	var losses int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if st := w.get(svc); st != nil {
				if _, forgotten := w.Lost(st); forgotten {
					losses++
				}
			}
		}
	})
	const reports = 200
	for i := range reports {
		ifaces := []string{"eth0"}
		if i%2 == 1 {
			ifaces = []string{"eth1"} // a status write in every Report
		}
		if err := w.Report(ctx, svc, addrs, ifaces); err != nil {
			close(done)
			wg.Wait()
			t.Fatalf("report %d: %v", i, err)
		}
	}
	close(done)
	wg.Wait()
	// A test of "never crashes" must have raced: the loop forgot the held
	// object many times over.
	if losses < reports/2 {
		t.Fatalf("Lost forgot the held object %d times in %d reports: the race was not exercised", losses, reports)
	}
	if err := w.Report(ctx, svc, addrs, []string{"eth0"}); err != nil {
		t.Fatalf("last report: %v", err)
	}
	held, ok := w.Held(svc)
	if !ok || len(held) != 1 || held[0] != addrs[0] {
		t.Fatalf("after the last report the Writer holds %v (ok %v), want %v", held, ok, addrs)
	}
}
