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
// Services as a settled controller leaves them (seedCluster), and
// reports its time and the requests it made, read from the API server's
// own counters: one LIST per kind, nothing per Service. The floor is a
// fresh process that makes only the Service LIST (listfloor): client-go's
// LIST in JSON and in protobuf, the protobuf body read and not decoded
// (bytes), and decoded as the plugin decodes it (decode: the least a
// command answering from every Service does).
//
// The commands are measured together, in rounds ("rounds"): each round
// runs every command once, each right after a run of the decode floor,
// starting with another command each round. The VM this runs on changes
// speed by tens of percent within minutes; measured one after another,
// the command measured in a slow minute looked slower than the others
// (BENCHMARKS.md). Each command's own entry then reports, from the rounds:
// its mean time (ns/op); the median of its runs' ratios to the decode
// floor's run just before each (x-floor-decode-median, the target: at
// most 1.3), which one slow run moves less than the ratio of the sums
// (x-floor-decode); the same for the two processes' CPU time
// (x-floor-decode-cpu-median); the median of each run's time above that
// floor run's (ms-above-floor-decode-median: the plugin's own work, which
// a faster machine shortens less than the floor, so the ratio grows as
// the machine speeds up); its mean time over each floor's mean
// (x-floor-json, x-floor-protobuf, x-floor-bytes); and the requests it
// made in one run (lists/op, requests/op). "replay" is the in-process
// part: the controller's replay and the views over listed objects, no
// API server.
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
	floorMean := map[string]time.Duration{}
	for _, enc := range []string{"json", "protobuf", "bytes", "decode"} {
		b.Run("floor_list_services_"+enc, func(b *testing.B) {
			var sum time.Duration
			for b.Loop() {
				sum += runFloor(b, floorBin, floorArgs[enc]).took
			}
			floorMean[enc] = sum / time.Duration(b.N)
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
	// Then one more, between two settled reads of the API server's
	// counters: the requests one run makes.
	requests := make([]requestCounts, len(commands))
	for i, cmd := range commands {
		before := settledRequests(b, cs)
		pluginB(b, cmd...)
		after := settledRequests(b, cs)
		requests[i] = requestCounts{lists: after.lists - before.lists, all: after.all - before.all}
	}

	runs := make([]commandRuns, len(commands))
	b.Run("rounds", func(b *testing.B) {
		round := 0
		for b.Loop() {
			for k := range commands {
				i := (round + k) % len(commands)
				floor := runFloor(b, floorBin, floorArgs["decode"])
				start := time.Now()
				r := pluginB(b, commands[i]...)
				if r.code != 0 {
					b.Fatalf("%v: exit %d: %s", commands[i], r.code, r.stderr)
				}
				runs[i].add(time.Since(start), r.cpu, floor)
			}
			round++
		}
	})
	for i, cmd := range commands {
		b.Run(strings.Join(cmd, "_"), func(b *testing.B) {
			for b.Loop() {
				// Measured in the rounds above.
			}
			runs[i].report(b, floorMean)
			b.ReportMetric(requests[i].lists, "lists/op")
			b.ReportMetric(requests[i].all, "requests/op")
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

// commandRuns are one command's runs in the rounds, each with the decode
// floor's run just before it.
type commandRuns struct {
	took, floor time.Duration // sums
	// ratios are each run's time over the floor run's; cpuRatios the same
	// for CPU time; above each run's time minus the floor run's, in ms.
	ratios, cpuRatios, above []float64
}

func (c *commandRuns) add(took, cpu time.Duration, floor floorRun) {
	c.took += took
	c.floor += floor.took
	c.ratios = append(c.ratios, float64(took)/float64(floor.took))
	c.cpuRatios = append(c.cpuRatios, float64(cpu)/float64(floor.cpu))
	c.above = append(c.above, float64(took-floor.took)/float64(time.Millisecond))
}

// report reports the runs as the entry's metrics; floorMean has each
// floor's mean time.
func (c *commandRuns) report(b *testing.B, floorMean map[string]time.Duration) {
	n := len(c.ratios)
	if n == 0 {
		b.Fatal("no runs: BenchmarkCommands/rounds measures every command; run BenchmarkCommands whole")
	}
	mean := c.took / time.Duration(n)
	b.ReportMetric(float64(mean.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(c.took)/float64(c.floor), "x-floor-decode")
	b.ReportMetric(median(c.ratios), "x-floor-decode-median")
	b.ReportMetric(median(c.cpuRatios), "x-floor-decode-cpu-median")
	b.ReportMetric(median(c.above), "ms-above-floor-decode-median")
	b.ReportMetric((c.floor / time.Duration(n)).Seconds(), "s-floor-decode")
	for _, enc := range []string{"json", "protobuf", "bytes"} {
		if floorMean[enc] > 0 { // its entry ran
			b.ReportMetric(float64(mean)/float64(floorMean[enc]), "x-floor-"+enc)
		}
	}
}

func median(xs []float64) float64 {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
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

// settledRequests reads the API server's request counters (its reads,
// GETs of /metrics, are not counted in them) until two reads in a row
// agree. A request is counted as its handler ends, which can be after its
// client has its answer and has exited: a read right after a process
// exits may miss its last request.
func settledRequests(b *testing.B, cs *kubernetes.Clientset) requestCounts {
	b.Helper()
	prev := apiRequests(b, cs)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		cur := apiRequests(b, cs)
		if cur == prev {
			return cur
		}
		prev = cur
	}
	b.Fatal("the API server's request counters did not settle in 10 s")
	return requestCounts{}
}

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
