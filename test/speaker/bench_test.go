package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/testenv"
)

// BenchmarkBGPServiceChange (invariant 10, make bench-speaker-bgp): with
// 10 or 10,000 Services advertised by two speakers on the real API
// server, one Service's Local endpoint moves from one node to the other;
// one operation is the EndpointSlice write until both nodes' Routers hold
// the new routes, timed once the speakers' own writes of the setup are
// done (waitWritesSettled). Reported per operation: Update calls and prefixes sent,
// summed over both nodes (2 and 2 when only the change is sent), and the
// time, which is mostly the API server's write and watch latency.
func BenchmarkBGPServiceChange(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			// The Services are written before the speakers start, which is
			// quicker on two cores; the speakers then sync them all.
			l := prepareBGPLab(b, "a", "b")
			pool := l.bgpPool("bench", "198.51.100.0/24", "2001:db8:b::/112")
			peer := l.bgpPeer("r", 64500, "203.0.113.1", nil, nil)
			l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
			bulkServices(b, l, n)
			l.startAll()
			for _, short := range []string{"a", "b"} {
				r := l.routers[short]
				waitRouter(b, r, fmt.Sprintf("node %s to hold %d routes", short, n), 10*time.Minute,
					func() bool { return r.routeCount(peer) >= n })
			}
			const addr = "198.51.100.250"
			moving := l.service("moving", []string{addr}, []string{"a"}, localPolicy)
			prefix := netip.MustParsePrefix(addr + "/32")
			waitAll := func(owner string) {
				for _, short := range []string{"a", "b"} {
					r := l.routers[short]
					waitRouter(b, r, fmt.Sprintf("node %s to settle with the moving Service on %s", short, owner), time.Minute,
						func() bool {
							_, has := r.route(peer, prefix.String())
							return has == (short == owner) && r.routeCount(peer) == n+btoi(short == owner)
						})
				}
			}
			waitAll("a")
			waitWritesSettled(b, l, n)
			u0, p0 := l.totals()
			owner := "a"
			for b.Loop() {
				owner = map[string]string{"a": "b", "b": "a"}[owner]
				l.endpoints(moving, ready(l.node(owner))...)
				waitAll(owner)
			}
			u1, p1 := l.totals()
			b.ReportMetric(float64(u1-u0)/float64(b.N), "updates/op")
			b.ReportMetric(float64(p1-p0)/float64(b.N), "prefixes/op")
		})
	}
}

// waitWritesSettled waits until the speakers' background writes of the
// setup are done: both nodes' ServiceBGPStatus for each of the n bulk
// Services exist, and the number of events in the Services' namespace (a
// nodeAssigned per Service per node) has stopped growing for three looks
// in a row, two seconds apart. Until then the API server, busy with tens
// of thousands of writes, is what one change's time would measure.
func waitWritesSettled(b *testing.B, l *lab, n int) {
	b.Helper()
	count := func(list *metav1.PartialObjectMetadataList, opts ...client.ListOption) int {
		if err := kube().List(context.Background(), list, opts...); err != nil {
			b.Fatalf("list %s: %v", list.Kind, err)
		}
		return len(list.Items)
	}
	statuses := func(node string) int {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("ServiceBGPStatusList"))
		return count(list, client.InNamespace(testenv.Namespace), client.MatchingLabels{v1beta1.LabelNode: node})
	}
	events := func() int {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(eventsv1.SchemeGroupVersion.WithKind("EventList"))
		return count(list, client.InNamespace(l.ns))
	}
	deadline := time.Now().Add(20 * time.Minute)
	last, steady := -1, 0
	for steady < 3 {
		if time.Now().After(deadline) {
			b.Fatalf("the speakers' writes did not settle within 20 minutes")
		}
		time.Sleep(2 * time.Second)
		if statuses(l.node("a")) < n || statuses(l.node("b")) < n {
			continue
		}
		if e := events(); e == last {
			steady++
		} else {
			last, steady = e, 0
		}
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// totals sums the Update calls and prefixes of the lab's Routers.
func (l *lab) totals() (updates, prefixes int) {
	for _, r := range l.routers {
		u, p := r.counts()
		updates, prefixes = updates+u, prefixes+p
	}
	return updates, prefixes
}

// bulkServices creates n Services with one address each in
// 2001:db8:b::/112 and a ready endpoint without a node (Cluster policy:
// every node advertises), 16 writers at a time. They are left for the
// control plane to drop when the process ends.
func bulkServices(b *testing.B, l *lab, n int) {
	b.Helper()
	addr := netip.MustParseAddr("2001:db8:b::1")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		addr = addr.Next()
		a := addr
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs <- writeService(l.ns, fmt.Sprintf("bulk-%d", i), a)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// waitRouter waits until cond holds, looking again after each Update r
// takes; it fails b when cond does not hold within limit.
func waitRouter(b *testing.B, r *fakeRouter, what string, limit time.Duration, cond func() bool) {
	b.Helper()
	timeout := time.After(limit)
	for !cond() {
		select {
		case <-r.updated:
		case <-timeout:
			b.Fatalf("waiting for %s: not within %v", what, limit)
		}
	}
}

// writeService creates a Service, its status and a ready EndpointSlice
// without a node.
func writeService(ns, name string, addr netip.Addr) error {
	svc := &corev1.Service{}
	svc.Namespace, svc.Name = ns, name
	// IPv6 cluster IPs: the test control plane's IPv4 range holds 254.
	svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
		Ports:          []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		IPFamilies:     []corev1.IPFamily{corev1.IPv6Protocol},
		IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
		// Nor can 10,000 Services have node ports.
		AllocateLoadBalancerNodePorts: ptr.To(false)}
	if err := kube().Create(context.Background(), svc); err != nil {
		return fmt.Errorf("create service %s: %w", name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr.String()}}
	if err := kube().Status().Update(context.Background(), svc); err != nil {
		return fmt.Errorf("set status of service %s: %w", name, err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-eps",
		Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"203.0.113.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}
	if err := kube().Create(context.Background(), slice); err != nil {
		return fmt.Errorf("create EndpointSlice of service %s: %w", name, err)
	}
	return nil
}
