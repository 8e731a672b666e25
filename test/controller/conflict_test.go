package controller

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/controller"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// interference is what another writer does to a Service at the moment the
// controller writes its status, before that write reaches the API server.
type interference func(t *testing.T, svc *corev1.Service)

// TestWriteConflict makes the API server refuse or lose the controller's
// first status write of one Service, in each way it can happen, and checks
// that the book followed the API server: the Service ends with the address
// the API server shows, no holder moves, and nothing is held twice.
//
// The controller runs in this process so that the interference lands
// between its decision and its write, every time; everything else (the API
// server, the conflicts, the cache) is real.
func TestWriteConflict(t *testing.T) {
	tests := []struct {
		name string
		// before runs just before the controller's first status write of
		// "contested"; after runs just after it, when it succeeded.
		before, after interference
		// failAfterWrite makes the first write return an error although the
		// API server applied it, as a lost reply does.
		failAfterWrite bool
		want           string
		// wantStatusWrites is how many status writes of "contested" the
		// controller makes in all.
		wantStatusWrites int
	}{
		{name: "another writer changed the service",
			before: touch,
			want:   "198.51.100.97", wantStatusWrites: 2},
		{name: "another writer assigned a free address",
			before: writeIngress("198.51.100.100"),
			want:   "198.51.100.100", wantStatusWrites: 2},
		{name: "another writer assigned the holder's address",
			before: writeIngress("198.51.100.96"),
			want:   "198.51.100.97", wantStatusWrites: 2},
		{name: "the write landed but its reply was lost",
			failAfterWrite: true,
			want:           "198.51.100.97", wantStatusWrites: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fixture.Namespace(t)
			fixture.Pool(t, "conflict-"+ns, ns, "198.51.100.96/29")
			// The holder is served by a controller without interference.
			p := startController(t)
			fixture.Service(t, ns, "holder")
			before := waitSettled(t, ns, "holder")
			p.Kill()

			hook := &writeHook{target: "contested", before: tt.before, failAfterWrite: tt.failAfterWrite}
			runInProcess(t, hook.funcs(t))
			fixture.Service(t, ns, "contested")
			var got map[string]observed
			fixture.WaitFor(t, "contested to settle on "+tt.want, func() bool {
				got = observe(t, ns)
				return got["contested"].ips == tt.want && got["contested"].reason == assign.ReasonAssigned &&
					got["contested"].pool != ""
			})
			checkKept(t, before, got)
			checkUnique(t, got)
			if n := hook.writes(); n != tt.wantStatusWrites {
				t.Errorf("controller wrote contested's status %d times, want %d", n, tt.wantStatusWrites)
			}
		})
	}
}

// touch is another writer changing a Service's labels.
func touch(t *testing.T, svc *corev1.Service) {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`))
	if err := kube().Patch(ctx, svc.DeepCopy(), patch); err != nil {
		t.Errorf("label %s: %v", svc.Name, err)
	}
}

// writeIngress is another writer setting a Service's status to one address.
func writeIngress(ip string) interference {
	return func(t *testing.T, svc *corev1.Service) {
		live := &corev1.Service{}
		if err := kube().Get(ctx, client.ObjectKeyFromObject(svc), live); err != nil {
			t.Errorf("get %s: %v", svc.Name, err)
			return
		}
		live.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		if err := kube().Status().Update(ctx, live); err != nil {
			t.Errorf("write %s into the status of %s: %v", ip, svc.Name, err)
		}
	}
}

// writeHook intercepts the controller's status writes of one Service.
type writeHook struct {
	target         string
	before         interference
	failAfterWrite bool

	mu    sync.Mutex
	count int
}

func (h *writeHook) writes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

func (h *writeHook) funcs(t *testing.T) interceptor.Funcs {
	return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		svc, ok := obj.(*corev1.Service)
		if !ok || sub != "status" || svc.Name != h.target {
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}
		h.mu.Lock()
		h.count++
		first := h.count == 1
		h.mu.Unlock()
		if first && h.before != nil {
			h.before(t, svc)
		}
		err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		if first && h.failAfterWrite && err == nil {
			return errors.New("connection reset by peer (injected after the write landed)")
		}
		return err
	}}
}

// runInProcess runs the controller in this process, its requests going
// through funcs, until the test ends.
func runInProcess(t *testing.T, funcs interceptor.Funcs) {
	t.Helper()
	runInProcessWith(t, testenv.Shared.Config, funcs)
}

// runInProcessWith is runInProcess on a rest config of the caller's, for
// faults below the client (its API reader included).
func runInProcessWith(t *testing.T, cfg *rest.Config, funcs interceptor.Funcs) {
	t.Helper()
	probe := proc.FreeAddr(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Shared.Scheme,
		Logger:                 testr.New(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probe,
		// Each subtest builds a new manager with the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, funcs), nil
		},
	})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	if err := controller.Setup(mgr, controller.Options{Namespace: testenv.Namespace}); err != nil {
		t.Fatalf("set up controller: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	if err := testenv.WaitReady(ctx, "http://"+probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("in-process controller never became ready: %v", err)
	}
}

// writeCounter counts the controller's writes of Services by kind.
type writeCounter struct {
	mu                             sync.Mutex
	statusPatches, patches, others map[string]int
}

func newWriteCounter() *writeCounter {
	return &writeCounter{statusPatches: map[string]int{}, patches: map[string]int{}, others: map[string]int{}}
}

// funcs counts, and passes every request on; dropMetadata makes status
// patches lose their metadata on the way, as an API server that keeps
// only the status would.
func (w *writeCounter) funcs(t *testing.T, dropMetadata bool) interceptor.Funcs {
	count := func(m map[string]int, obj client.Object) {
		if _, ok := obj.(*corev1.Service); ok {
			w.mu.Lock()
			m[obj.GetName()]++
			w.mu.Unlock()
		}
	}
	return interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count(w.patches, obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count(w.others, obj)
			return c.Update(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count(w.others, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			count(w.statusPatches, obj)
			if _, ok := obj.(*corev1.Service); ok && dropMetadata {
				patch = withoutAnnotations(t, obj, patch)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// withoutAnnotations rewrites a merge patch without its annotations.
func withoutAnnotations(t *testing.T, obj client.Object, patch client.Patch) client.Patch {
	data, err := patch.Data(obj)
	if err != nil {
		t.Errorf("read patch: %v", err)
		return patch
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Errorf("decode patch %s: %v", data, err)
		return patch
	}
	if md, ok := doc["metadata"].(map[string]any); ok {
		delete(md, "annotations")
	}
	out, _ := json.Marshal(doc)
	return client.RawPatch(patch.Type(), out)
}

// TestOneRequestPerService counts the controller's writes while it serves
// a batch of new Services: one status patch each, which carries the pool
// annotation and the allocation record too. A reconcile woken by its own
// write must not write again. Against an API server that drops metadata
// written through /status, the controller notices and patches the
// annotations separately: two requests, still never more.
func TestOneRequestPerService(t *testing.T) {
	for _, tt := range []struct {
		name         string
		dropMetadata bool
		wantPatches  int
	}{
		{"metadata kept with the status", false, 0},
		{"metadata dropped from the status", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := fixture.Namespace(t)
			fixture.Pool(t, "count-"+ns, ns, "203.0.113.64/27")
			w := newWriteCounter()
			runInProcess(t, w.funcs(t, tt.dropMetadata))
			names := fixture.Services(t, ns, "s", 20)
			got := waitSettled(t, ns, names...)
			checkUnique(t, got)
			// Give a late duplicate a chance to show: the controller is
			// idle once every Service's watch events have been reconciled.
			fixture.Service(t, ns, "last")
			waitSettled(t, ns, "last")
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, name := range names {
				if w.statusPatches[name] != 1 || w.patches[name] != tt.wantPatches || w.others[name] != 0 {
					t.Errorf("%s: %d status patches, %d patches, %d other writes; want 1, %d, 0",
						name, w.statusPatches[name], w.patches[name], w.others[name], tt.wantPatches)
				}
				if got[name].pool == "" || got[name].record == "" {
					t.Errorf("%s: pool annotation %q, record %q; want both", name, got[name].pool, got[name].record)
				}
			}
		})
	}
}
