package packets

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/lab"
)

// bulkParallelism is how many API writes the benchmarks' setup makes at
// once.
const bulkParallelism = 16

// services creates one Service per address, each with an EndpointSlice
// with a ready endpoint on every node, many at a time, and deletes them
// all, many at a time, when the test ends.
func (c *cluster) services(prefix string, addrs []netip.Addr) {
	c.t.Helper()
	var objs []client.Object
	var mu sync.Mutex
	err := c.parallel(len(addrs), func(i int) error {
		name := fmt.Sprintf("%s-%d", prefix, i)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
				// The node port range holds 2,768; the benchmarks go to 10,000.
				AllocateLoadBalancerNodePorts: ptr.To(false)}}
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: endpointsOn(c.lab.Nodes)}
		ctx := context.Background()
		if err := kube().Create(ctx, svc); err != nil {
			return fmt.Errorf("create service %s: %w", name, err)
		}
		mu.Lock()
		objs = append(objs, svc, slice)
		mu.Unlock()
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addrs[i].String()}}
		if err := kube().Status().Update(ctx, svc); err != nil {
			return fmt.Errorf("set the status of service %s: %w", name, err)
		}
		if err := kube().Create(ctx, slice); err != nil {
			return fmt.Errorf("create EndpointSlice %s: %w", name, err)
		}
		return nil
	})
	c.t.Cleanup(func() {
		_ = c.parallel(len(objs), func(i int) error { return client.IgnoreNotFound(kube().Delete(context.Background(), objs[i])) })
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// parallel runs do(0..n-1), bulkParallelism at a time, and returns the
// first error.
func (c *cluster) parallel(n int, do func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	slots := make(chan struct{}, bulkParallelism)
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := do(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// benchAddresses are the addresses the failover benchmarks announce: n
// IPv6 addresses from 2001:db8:300::/64, and for IPv4 the addresses of
// 198.51.100.0/24 and 203.0.113.0/24 that no lab host holds (all of them
// for n < 0), else the first n of those.
func benchAddresses(l *lab.Lab, family string, n int) []netip.Addr {
	var out []netip.Addr
	if family == "ipv6" {
		base := netip.MustParseAddr("2001:db8:300::1")
		for a := base; len(out) < n; a = a.Next() {
			out = append(out, a)
		}
		return out
	}
	taken := map[netip.Addr]bool{lab.ClientIPv4: true}
	for _, node := range l.Nodes {
		taken[node.IPv4] = true
	}
	for _, p := range []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24")} {
		for a := p.Addr(); p.Contains(a); a = a.Next() {
			if !taken[a] && (n < 0 || len(out) < n) {
				out = append(out, a)
			}
		}
	}
	return out
}
