package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/controller"
	"github.com/steadylb/steadylb/test/testenv"
)

// BenchmarkRestartWithReservations restarts the controller (SIGKILL) on
// N Services created, of which the last `kept` were deleted within their pool's
// retention window (so their addresses are retained), plus `kept`
// AddressReservations for Services that do not exist yet. The restart
// must write nothing: no Service, no reservation; it is timed to ready
// and to settled (every work queue idle), against an informer's cache
// sync of the same Services.
func BenchmarkRestartWithReservations(b *testing.B) {
	for _, size := range []struct{ n, kept int }{{2000, 200}, {10000, 1000}} {
		b.Run(fmt.Sprintf("n=%d,kept=%d", size.n, size.kept), func(b *testing.B) {
			var ready, settled, sync time.Duration
			var writes, changedSvcs, changedRes float64
			for range b.N {
				r := measureReservedRestart(b, size.n, size.kept)
				ready += r.ready
				settled += r.settled
				sync += r.cacheSync
				writes += r.writes
				changedSvcs += float64(r.changedServices)
				changedRes += float64(r.changedReservations)
			}
			per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(per(ready), "s/restart-ready")
			b.ReportMetric(per(settled), "s/restart-settled")
			b.ReportMetric(per(sync), "s/cache-sync")
			b.ReportMetric(writes/float64(b.N), "writes/restart")
			b.ReportMetric(changedSvcs/float64(b.N), "svc-changed/restart")
			b.ReportMetric(changedRes/float64(b.N), "reservations-changed/restart")
		})
	}
}

type reservedRestart struct {
	ready, settled, cacheSync            time.Duration
	writes                               float64
	changedServices, changedReservations int
}

func measureReservedRestart(b *testing.B, n, kept int) reservedRestart {
	var cl cleanups
	defer cl.run()
	env := startEnv(b, &cl)
	c := newClient(b, env)
	createPool(b, c)
	retainPool(b, c, "24h")
	const ns = "bench"
	createNamespace(b, c, ns)
	createServices(b, c, ns, n)
	obs := observe(b, &cl, env, ns, n, fullyWritten)
	p := startController(b, &cl, env)
	obs.waitAll(b, "controller assigning", p)
	p.waitSettled(b, n)
	obs.close()

	// Retained: the last `kept` Services are deleted while it runs.
	for i := n - kept; i < n; i++ {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%05d", i)}}
		if err := c.Delete(context.Background(), svc); err != nil {
			b.Fatalf("delete %s: %v", svc.Name, err)
		}
	}
	// Reserved: for Services that do not exist yet, on free addresses.
	for i := range kept {
		r := &v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("future-%05d", i)},
			Spec: v1alpha1.AddressReservationSpec{ServiceName: fmt.Sprintf("future-%05d", i),
				Addresses: []string{poolAddr(n + i).String()}}}
		if err := c.Create(context.Background(), r); err != nil {
			b.Fatalf("create reservation: %v", err)
		}
	}
	before := waitReservations(b, c, ns, 2*kept)
	p.waitSettled(b, n-kept)
	services := snapshot(b, c, ns)
	p.Kill()

	out := reservedRestart{cacheSync: cacheSync(b, env, n-kept)}
	ph := beginPhase(b, &cl, env, "controller, restart with reservations", n-kept)
	ph.notef("%d Services, %d retained and %d reserved addresses", n-kept, kept, kept)
	p = startController(b, &cl, env)
	out.ready = p.waitReady(b)
	out.settled = p.waitSettled(b, n-kept)
	ph.end(b)
	out.writes = p.mustScrape(b).Sum("steadylb_service_status_writes_total")
	for name, a := range snapshot(b, c, ns) {
		if services[name].resourceVersion != a.resourceVersion {
			out.changedServices++
		}
	}
	for name, rv := range waitReservations(b, c, ns, 2*kept) {
		if before[name] != rv {
			out.changedReservations++
		}
	}
	return out
}

// retainPool sets the bench pool's retention window.
func retainPool(b *testing.B, c client.Client, window string) {
	b.Helper()
	pool := &v1beta1.IPAddressPool{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: testenv.Namespace, Name: poolName}, pool); err != nil {
		b.Fatalf("get pool: %v", err)
	}
	pool.Annotations = map[string]string{controller.AnnotationRetainFor: window}
	if err := c.Update(context.Background(), pool); err != nil {
		b.Fatalf("annotate pool: %v", err)
	}
}

// waitReservations waits until want reservations exist, each with its
// Bound condition written, and returns their resourceVersions.
func waitReservations(b *testing.B, c client.Client, ns string, want int) map[string]string {
	b.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		var list v1alpha1.AddressReservationList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatalf("list reservations: %v", err)
		}
		out := map[string]string{}
		for _, r := range list.Items {
			if meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionBound) != nil {
				out[r.Name] = r.ResourceVersion
			}
		}
		if len(out) == want {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("fewer than %d reservations with a status after %v", want, waitLimit)
	return nil
}
