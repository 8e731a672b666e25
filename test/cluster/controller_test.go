package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// addressWatch records every change of the addresses the Services of a
// namespace show, from a watch started before the disruption.
type addressWatch struct {
	cs      kubernetes.Interface
	mu      sync.Mutex
	current map[string]string
	changes []string
	events  int
}

func watchAddresses(t *testing.T, ns string) *addressWatch {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testenv.Shared.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &addressWatch{cs: cs, current: map[string]string{}}
	for _, s := range list.Items {
		w.current[s.Name] = ingress(&s)
	}
	wi, err := cs.CoreV1().Services(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wi.Stop)
	go func() {
		for ev := range wi.ResultChan() {
			s, ok := ev.Object.(*corev1.Service)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			w.mu.Lock()
			w.events++
			if got := ingress(s); got != w.current[s.Name] {
				w.changes = append(w.changes, fmt.Sprintf("%s: %q -> %q", s.Name, w.current[s.Name], got))
				w.current[s.Name] = got
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stillWatching fails t unless a change written to the Service name now
// reaches the watch: "no address changed" means something only if the
// watch was there to see one.
func (w *addressWatch) stillWatching(t *testing.T, ns, name string) {
	t.Helper()
	w.mu.Lock()
	seen := w.events
	w.mu.Unlock()
	patch := []byte(`{"metadata":{"labels":{"test.steadylb.io/watched":"yes"}}}`)
	if _, err := w.cs.CoreV1().Services(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the address watch to see a label written to "+name, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.events > seen
	})
}

func ingress(s *corev1.Service) string {
	var ips []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	return strings.Join(ips, ",")
}

// TestControllerKilledUnderTraffic is the original bug's scenario with
// traffic: a full pool, Services waiting for an address, and the leading
// controller replica killed with SIGKILL five times (each time the other
// replica takes over and a new one starts, as the Deployment would), while
// requests flow through one of the Services: no request fails and no
// Service's address changes, not even for a moment.
func TestControllerKilledUnderTraffic(t *testing.T) {
	c := cluster.Require(t)
	s := c.StartSteadylb(t)
	ns := fixture.Namespace(t)
	cluster.L2Pool(t, "full-"+ns, ns, labAddress(40), labAddress(41), labAddress(42))
	app := c.NewApp(t, ns, "web")
	for _, n := range c.Lab.Nodes {
		app.AddPod(t, n)
	}
	svc := app.Service(t)
	addr := cluster.WaitAddress(t, svc)
	for _, name := range fixture.Services(t, ns, "filler", 2) {
		cluster.WaitAddress(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	fixture.Services(t, ns, "pending", 3)
	addresses := watchAddresses(t, ns)
	tr := startLoad(t, c, addr, rate)
	await(t, tr, "steady answers", steady, succeeded)

	for i := range 5 {
		var lead string
		fixture.WaitFor(t, "a leader", func() bool { lead = cluster.Leader(t.Context()); return lead != "" })
		idx := slices.IndexFunc(s.Controllers, func(ctl *cluster.Controller) bool { return ctl.Pod.Name == lead })
		if idx < 0 {
			t.Fatalf("kill %d: the leader %q is none of the running replicas", i+1, lead)
		}
		t.Logf("%s: SIGKILL to the leader %s", time.Now().Format("15:04:05.000"), lead)
		s.Controllers[idx].Kill()
		fresh := c.StartController(t)
		s.Controllers[idx] = fresh
		fixture.WaitFor(t, "a new leader after "+lead, func() bool {
			l := cluster.Leader(t.Context())
			return l != "" && l != lead
		})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		if err := fresh.WaitReady(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		await(t, tr, "steady answers", steady, succeeded)
	}
	rep := stop(t, tr)
	if rep.Failed != 0 {
		t.Errorf("%d of %d requests failed while the controller was killed 5 times: %v", rep.Failed, rep.Sent, rep.Errors)
	}
	addresses.stillWatching(t, ns, "filler-0")
	addresses.mu.Lock()
	defer addresses.mu.Unlock()
	if len(addresses.changes) != 0 {
		t.Errorf("addresses changed: %v", addresses.changes)
	}
	t.Logf("%d Service updates seen, %d address changes", addresses.events, len(addresses.changes))
}
