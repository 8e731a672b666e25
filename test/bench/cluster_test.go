package bench

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/testenv"
)

const (
	poolName = "bench"
	// poolRange holds the addresses the controller hands out: 65,536, in
	// the documentation prefix. IPv6, because the three IPv4 documentation
	// /24s hold only 762 usable addresses.
	poolRange = "2001:db8:1::/112"
	// waitLimit only guards against a hang; nothing here is a timed
	// assertion.
	waitLimit = 30 * time.Minute
)

var poolPrefix = netip.MustParsePrefix(poolRange)

// poolAddr is the pool's i-th address, 0 <= i < 65,536.
func poolAddr(i int) netip.Addr {
	a := poolPrefix.Addr().As16()
	a[14], a[15] = byte(i>>8), byte(i)
	return netip.AddrFrom16(a)
}

// poolOffset is the inverse of poolAddr, -1 for an address outside the
// pool.
func poolOffset(ip string) int {
	a, err := netip.ParseAddr(ip)
	if err != nil || !poolPrefix.Contains(a) {
		return -1
	}
	b := a.As16()
	return int(b[14])<<8 | int(b[15])
}

// startEnv starts a control plane whose Service ClusterIP ranges hold
// thousands of Services: the default IPv4 /24 stays primary (the
// "kubernetes" Service keeps an IPv4 address, like the advertise address)
// and an IPv6 /108 (1M addresses from the documentation prefix, never
// routed anywhere) serves the benchmark's IPv6 single-stack Services.
func startEnv(b *testing.B, cl *cleanups) *testenv.Env {
	b.Helper()
	env, err := testenv.StartWith(testenv.Options{APIServerArgs: map[string]string{
		"service-cluster-ip-range": "10.0.0.0/24,2001:db8:ffff::/108",
	}})
	if err != nil {
		b.Fatalf("start control plane: %v", err)
	}
	cl.add(func() {
		if err := env.Stop(); err != nil {
			b.Errorf("stop control plane: %v", err)
		}
	})
	return env
}

// unlimited returns the control plane's client configuration without
// client-side rate limiting, as the controller runs (controller-runtime
// sets QPS -1 and leaves flow control to the API server): a plain writer
// throttled by client-go would measure client-go.
func unlimited(env *testenv.Env) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

func newClient(b *testing.B, env *testenv.Env) client.Client {
	b.Helper()
	c, err := client.New(unlimited(env), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatalf("create client: %v", err)
	}
	return c
}

func newClientset(b *testing.B, env *testenv.Env) *kubernetes.Clientset {
	b.Helper()
	cs, err := kubernetes.NewForConfig(unlimited(env))
	if err != nil {
		b.Fatalf("create clientset: %v", err)
	}
	return cs
}

func createNamespace(b *testing.B, c client.Client, name string) {
	b.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		b.Fatalf("create namespace %s: %v", name, err)
	}
}

func createPool(b *testing.B, c client.Client) {
	b.Helper()
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: poolName, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{poolRange}}}
	if err := c.Create(context.Background(), pool); err != nil {
		b.Fatalf("create pool: %v", err)
	}
}

// createServices creates n IPv6 single-stack LoadBalancer Services and
// returns them as the API server stored them, in name order, and how long
// that took. No NodePorts: the default range has 2,768, fewer than the
// Services.
func createServices(b *testing.B, c client.Client, ns string, n int) ([]*corev1.Service, time.Duration) {
	b.Helper()
	const workers = 4 // creation is not measured; a few in flight keep it short
	out := make([]*corev1.Service, n)
	errs := make(chan error, workers)
	began := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				name := fmt.Sprintf("svc-%05d", i)
				svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: corev1.ServiceSpec{
						Type:                          corev1.ServiceTypeLoadBalancer,
						IPFamilyPolicy:                ptr.To(corev1.IPFamilyPolicySingleStack),
						IPFamilies:                    []corev1.IPFamily{corev1.IPv6Protocol},
						AllocateLoadBalancerNodePorts: ptr.To(false),
						Selector:                      map[string]string{"app": name},
						Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080),
							Protocol: corev1.ProtocolTCP}},
					}}
				if err := c.Create(context.Background(), svc); err != nil {
					errs <- fmt.Errorf("create service %s/%s: %w", ns, name, err)
					return
				}
				out[i] = svc
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return out, time.Since(began)
}

// assigned reads what the controller (or the plain writer) wrote on a
// Service: its one ingress address, the pool annotation and the condition
// reason.
type assigned struct {
	ip, pool, reason, resourceVersion string
}

func snapshot(b *testing.B, c client.Client, ns string) map[string]assigned {
	b.Helper()
	var list corev1.ServiceList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		b.Fatalf("list services: %v", err)
	}
	out := make(map[string]assigned, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		a := assigned{pool: s.Annotations[assign.AnnotationAllocatedFromPool], resourceVersion: s.ResourceVersion}
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		a.ip = strings.Join(ips, ",")
		for _, cond := range s.Status.Conditions {
			if cond.Type == assign.ConditionAddressAssigned {
				a.reason = cond.Reason
			}
		}
		out[s.Name] = a
	}
	return out
}

// checkAssigned fails b unless each of the n Services shows one address
// from the pool, no address twice, the pool annotation and the Assigned
// condition: a benchmark that measured broken work would be worse than
// none.
func checkAssigned(b *testing.B, got map[string]assigned, n int) {
	b.Helper()
	if len(got) != n {
		b.Fatalf("%d Services, want %d", len(got), n)
	}
	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	holder := make(map[netip.Addr]string, n)
	bad := 0
	for _, name := range names {
		a := got[name]
		ip, err := netip.ParseAddr(a.ip)
		problem := ""
		switch {
		case err != nil || !poolPrefix.Contains(ip):
			problem = fmt.Sprintf("address %q is not one address from %s", a.ip, poolRange)
		case holder[ip] != "":
			problem = fmt.Sprintf("address %s also held by %s", ip, holder[ip])
		case a.pool != poolName || a.reason != assign.ReasonAssigned:
			problem = fmt.Sprintf("pool annotation %q, condition reason %q", a.pool, a.reason)
		}
		if problem != "" {
			if bad++; bad <= 10 {
				b.Errorf("service %s: %s", name, problem)
			}
			continue
		}
		holder[ip] = name
	}
	if bad > 0 {
		b.Fatalf("%d of %d Services not assigned as expected", bad, n)
	}
}

// observer watches one namespace from the benchmark process and records
// when each Service first looked done and when each got its IPAllocated
// event. The same observer times the controller and the plain writer, so
// its own cost and lag fall on both sides.
type observer struct {
	n      int
	isDone func(*corev1.Service) bool

	mu      sync.Mutex
	doneAt  map[string]time.Time
	eventAt map[string]time.Time
	allDone chan struct{}

	stop      chan struct{}
	shutdown  func()
	closeOnce sync.Once
}

// fullyWritten is what the controller writes for a Service, less the
// event: the address and the pool annotation (written after the status).
func fullyWritten(s *corev1.Service) bool {
	return len(s.Status.LoadBalancer.Ingress) > 0 && s.Annotations[assign.AnnotationAllocatedFromPool] != ""
}

func observe(b *testing.B, cl *cleanups, env *testenv.Env, ns string, n int, isDone func(*corev1.Service) bool) *observer {
	b.Helper()
	cs := newClientset(b, env)
	o := &observer{n: n, isDone: isDone, doneAt: map[string]time.Time{}, eventAt: map[string]time.Time{},
		allDone: make(chan struct{}), stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	onService := func(obj any) {
		if s, ok := obj.(*corev1.Service); ok && o.isDone(s) {
			o.record(o.doneAt, s.Name, true)
		}
	}
	_, err := factory.Core().V1().Services().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onService,
		UpdateFunc: func(_, obj any) { onService(obj) },
	})
	if err != nil {
		b.Fatalf("watch services: %v", err)
	}
	_, err = factory.Events().V1().Events().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if e, ok := obj.(*eventsv1.Event); ok && e.Reason == assign.EventIPAllocated && e.Regarding.Kind == "Service" {
				o.record(o.eventAt, e.Regarding.Name, false)
			}
		},
	})
	if err != nil {
		b.Fatalf("watch events: %v", err)
	}
	factory.Start(o.stop)
	for typ, ok := range factory.WaitForCacheSync(o.stop) {
		if !ok {
			b.Fatalf("observer: %v never synced", typ)
		}
	}
	o.shutdown = factory.Shutdown
	cl.add(o.close)
	return o
}

// close stops the observer's watches; it may be called more than once.
func (o *observer) close() {
	o.closeOnce.Do(func() {
		close(o.stop)
		o.shutdown()
	})
}

func (o *observer) record(m map[string]time.Time, name string, services bool) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := m[name]; seen {
		return
	}
	m[name] = now
	if services && len(m) == o.n {
		close(o.allDone)
	}
}

// waitAll blocks until every Service looked done and returns the first and
// the last time one did. The exit of controller p, if not nil, ends the
// wait.
func (o *observer) waitAll(b *testing.B, what string, p *process) (first, last time.Time) {
	b.Helper()
	var exited <-chan struct{} // nil: never
	if p != nil {
		exited = p.Done
	}
	select {
	case <-o.allDone:
	case <-exited:
		b.Fatalf("%s: controller exited (%v):\n%s", what, p.Exited(), p.Output())
	case <-time.After(waitLimit):
		o.mu.Lock()
		done := len(o.doneAt)
		o.mu.Unlock()
		b.Fatalf("%s: only %d of %d Services done after %v", what, done, o.n, waitLimit)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return span(o.doneAt)
}

// waitEvents waits for the IPAllocated events, which the controller sends
// asynchronously, until all n arrived or none arrived for quiet. It returns
// how many arrived and when the last did.
func (o *observer) waitEvents(quiet time.Duration) (int, time.Time) {
	seen, since := -1, time.Now()
	for {
		o.mu.Lock()
		count := len(o.eventAt)
		_, last := span(o.eventAt)
		o.mu.Unlock()
		if count >= o.n || (count == seen && time.Since(since) > quiet) {
			return count, last
		}
		if count != seen {
			seen, since = count, time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func span(m map[string]time.Time) (first, last time.Time) {
	for _, t := range m {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last
}
