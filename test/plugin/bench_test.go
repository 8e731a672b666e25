package plugin

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/inspect"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

// benchServices is the scale: every command answers for 10,000
// Services.
const benchServices = 10000

// BenchmarkCommands runs each command as a process against 10,000
// Services whose status already shows an address (written directly, as a
// settled controller leaves them), and reports its time and the requests
// it made, read from the API server's own counters: one LIST per kind,
// nothing per Service. The floor is a fresh process that makes only the
// Service LIST (listfloor): client-go's LIST in JSON and in protobuf, the
// protobuf body read and not decoded (bytes), and decoded as the plugin
// decodes it (decode: the least a command answering from every Service
// does), each run before each run of a command; each command reports its
// time as a multiple of each (target: at most 1.3x the decode floor), and
// the median of its runs' ratios to the decode floor's run just before
// each (x-floor-decode-median), which one slow run moves less, and the
// same for the two processes' CPU time (x-floor-decode-cpu-median): the
// work each does, its waits left out (whether it scatters less than the
// wall time is for more series to say; BENCHMARKS.md), and the median of
// each run's time above that floor run's (ms-above-floor-decode-median).
// "replay" is the in-process part: the controller's replay and the views
// over listed objects, no API server.
func BenchmarkCommands(b *testing.B) {
	ns := "bench"
	c, cs := benchClients(b)
	seedCluster(b, c, ns, benchServices)
	floorBin, remove, err := proc.Build("github.com/steadylb/steadylb/test/plugin/listfloor")
	if err != nil {
		b.Fatal(err)
	}
	defer remove()

	floorArgs := map[string][]string{
		"json":     {"--kubeconfig", testenv.Shared.Kubeconfig},
		"protobuf": {"--kubeconfig", testenv.Shared.Kubeconfig, "--protobuf"},
		"bytes":    {"--kubeconfig", testenv.Shared.Kubeconfig, "--discard"},
		"decode":   {"--kubeconfig", testenv.Shared.Kubeconfig, "--decode"},
	}
	floors := []string{"json", "protobuf", "bytes", "decode"} // decode last: each command's run follows it
	for _, enc := range floors {
		b.Run("floor_list_services_"+enc, func(b *testing.B) {
			for b.Loop() {
				runFloor(b, floorBin, floorArgs[enc])
			}
		})
	}

	commands := [][]string{
		{"pools"},
		{"addresses"},
		{"addresses", "--free"},
		{"explain", "svc-05000", "-n", ns},
		{"migrate"},
	}
	// One unmeasured run of each command first, as the floors had theirs
	// above: otherwise the first command measured also pays for the
	// plugin binary's first start after its build.
	for _, cmd := range commands {
		if r := pluginB(b, cmd...); r.code != 0 {
			b.Fatalf("%v: exit %d: %s", cmd, r.code, r.stderr)
		}
	}
	for _, cmd := range commands {
		b.Run(strings.Join(cmd, "_"), func(b *testing.B) {
			// Each run of the command follows a run of each floor, timed
			// apart, so that the three share the machine's load of the
			// moment: on a shared machine that moves every figure by
			// tens of percent within minutes.
			floor := map[string]time.Duration{}
			// ratios are each run's time over the decode floor's run just
			// before it: their median moves less with the machine's load
			// than the ratio of the sums.
			var ratios []float64
			// cpuRatios are the same for the processes' CPU time.
			var cpuRatios []float64
			// above are each run's time minus the decode floor's run's:
			// the plugin's own work. A faster machine shortens the floor
			// more than this, so the ratio grows as the machine speeds up
			// (BENCHMARKS.md); this says whether the code moved.
			var above []float64
			before := apiRequests(b, cs)
			for b.Loop() {
				b.StopTimer()
				var decodeRun floorRun
				for _, enc := range floors {
					run := runFloor(b, floorBin, floorArgs[enc])
					floor[enc] += run.took
					if enc == "decode" {
						decodeRun = run
					}
				}
				b.StartTimer()
				start := time.Now()
				r := pluginB(b, cmd...)
				if r.code != 0 {
					b.Fatalf("%v: exit %d: %s", cmd, r.code, r.stderr)
				}
				took := time.Since(start)
				ratios = append(ratios, float64(took)/float64(decodeRun.took))
				above = append(above, float64(took-decodeRun.took)/float64(time.Millisecond))
				cpuRatios = append(cpuRatios, float64(r.cpu)/float64(decodeRun.cpu))
			}
			elapsed := b.Elapsed()
			after := apiRequests(b, cs)
			runs := float64(b.N)
			b.ReportMetric(elapsed.Seconds()/floor["json"].Seconds(), "x-floor-json")
			b.ReportMetric(elapsed.Seconds()/floor["protobuf"].Seconds(), "x-floor-protobuf")
			b.ReportMetric(elapsed.Seconds()/floor["bytes"].Seconds(), "x-floor-bytes")
			b.ReportMetric(elapsed.Seconds()/floor["decode"].Seconds(), "x-floor-decode")
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "x-floor-decode-median")
			slices.Sort(cpuRatios)
			b.ReportMetric(cpuRatios[len(cpuRatios)/2], "x-floor-decode-cpu-median")
			slices.Sort(above)
			b.ReportMetric(above[len(above)/2], "ms-above-floor-decode-median")
			b.ReportMetric(floor["protobuf"].Seconds()/runs, "s-floor-protobuf")
			b.ReportMetric(floor["decode"].Seconds()/runs, "s-floor-decode")
			// The floors made one LIST each per run; the first scrape's
			// own GET of /metrics is counted in the second.
			b.ReportMetric((after.lists-before.lists)/runs-float64(len(floors)), "lists/op")
			b.ReportMetric((after.all-before.all-1)/runs-float64(len(floors)), "requests/op")
		})
	}
	b.Run("replay", func(b *testing.B) {
		clients, err := inspect.Connect(testenv.Shared.Config)
		if err != nil {
			b.Fatal(err)
		}
		cluster, _, err := inspect.Load(context.Background(), clients, inspect.Source{Namespace: testenv.Namespace})
		if err != nil {
			b.Fatal(err)
		}
		if len(cluster.Services) < benchServices {
			b.Fatalf("listed %d Services, want at least %d", len(cluster.Services), benchServices)
		}
		// The whole replay, restore included, each time: a Prerestore
		// serves one replay (the first), and its work was done during
		// the LIST.
		cluster.Prerestored = nil
		for b.Loop() {
			// As the addresses command makes them.
			am := inspect.MakeAddresses(inspect.Filter{}, len(cluster.Services))
			s, err := inspect.NewState(cluster, am.Keep)
			if err != nil {
				b.Fatal(err)
			}
			if rows, _ := am.Rows(s); len(rows) != benchServices {
				b.Fatalf("%d addresses, want %d", len(rows), benchServices)
			}
		}
	})
}

// floorRun is one run of listfloor: how long it took, and its user and
// system time.
type floorRun struct {
	took, cpu time.Duration
}

// runFloor runs listfloor once.
func runFloor(b *testing.B, bin string, args []string) floorRun {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(bin, args...)
	out, err := cmd.Output()
	run := floorRun{took: time.Since(start)}
	if err != nil {
		b.Fatalf("listfloor: %v", err)
	}
	run.cpu = cpuOf(cmd.ProcessState)
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n < benchServices {
		b.Fatalf("listfloor printed %s (Services, or bytes with --discard), want at least %d", out, benchServices)
	}
	return run
}

func benchClients(b *testing.B) (client.Client, *kubernetes.Clientset) {
	b.Helper()
	cfg := rest.CopyConfig(testenv.Shared.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: testenv.Shared.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c, cs
}

// seedCluster makes a pool and n IPv6 Services holding its first n
// addresses, as the controller leaves them: its two annotations (the pool
// and the allocation record) and its condition. Without the annotations
// the LIST is smaller, and the replay reads no record, than in a cluster
// steadylb serves.
func seedCluster(b *testing.B, c client.Client, ns string, n int) {
	b.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"2001:db8:1::/112"}}}
	if err := c.Create(ctx, pool); err != nil {
		b.Fatal(err)
	}
	const workers = 4 // seeding is not measured; a few in flight keep it short
	base := netip.MustParseAddr("2001:db8:1::")
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	began := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := seedService(ctx, c, ns, i, offset(base, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d Services in %v", n, time.Since(began).Round(time.Second))
}

func seedService(ctx context.Context, c client.Client, ns string, i int, ip netip.Addr) error {
	name := fmt.Sprintf("svc-%05d", i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Annotations: map[string]string{assign.AnnotationAllocatedFromPool: "bench",
			assign.AnnotationAllocation: `{"ips":["` + ip.String() + `"]}`}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack), IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol},
			AllocateLoadBalancerNodePorts: ptr.To(false), Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	if err := c.Create(ctx, svc); err != nil {
		return fmt.Errorf("create service %s: %w", name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip.String()}}
	meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{Type: assign.ConditionAddressAssigned,
		Status: metav1.ConditionTrue, Reason: assign.ReasonAssigned,
		Message: fmt.Sprintf("assigned [%s] from pool %q", ip, "bench")})
	if err := c.Status().Update(ctx, svc); err != nil {
		return fmt.Errorf("write status of %s: %w", name, err)
	}
	return nil
}

func offset(base netip.Addr, i int) netip.Addr {
	a := base.As16()
	a[14], a[15] = byte(i>>8), byte(i)
	return netip.AddrFrom16(a)
}

// requestCounts are the API server's request counters.
type requestCounts struct{ lists, all float64 }

func apiRequests(b *testing.B, cs *kubernetes.Clientset) requestCounts {
	b.Helper()
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("scrape the API server's metrics: %v", err)
	}
	s, err := scrape.Parse(strings.NewReader(string(raw)))
	if err != nil {
		b.Fatal(err)
	}
	return requestCounts{lists: s.Sum("apiserver_request_total", "verb", "LIST"), all: s.Sum("apiserver_request_total")}
}

// pluginB runs the plugin from a benchmark.
func pluginB(b *testing.B, args ...string) result {
	b.Helper()
	return runPlugin(b, testenv.Shared.Kubeconfig, args...)
}
