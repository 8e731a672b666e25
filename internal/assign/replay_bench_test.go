package assign

import (
	"fmt"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
)

// The startup replay at a scale the API server of a two-core machine cannot
// hold (it writes about 60 objects a second): the synthetic clusters below
// are what a controller lists after a restart. Each size has the same mix:
// most Services show their address and carry their record; one in 100 was
// restored without status and gets its record back; one in 100 is pending;
// one in 100 shares its address with the next under a common key; one in
// 1,000 shows an address another Service holds (a duplicate another
// implementation left); one in 200 addresses is kept by an
// AddressReservation, half of them retained for a deleted Service, a
// quarter for a pending Service that takes it over.
var replaySizes = []int{10_000, 100_000, 1_000_000}

// syntheticCluster builds a cluster of n Services in 100 namespaces, one
// IPv6 pool large enough for all.
func syntheticCluster(n int) Cluster {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	c := Cluster{
		Pools: []v1beta1.IPAddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "metallb-system"},
			Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"2001:db8:1::/104"}}}},
		Services: make([]corev1.Service, 0, n),
		Now:      now,
	}
	for i := range 100 {
		c.Namespaces = append(c.Namespaces, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", i),
			Labels: map[string]string{"team": fmt.Sprintf("t%d", i%7)}}})
	}
	for i := range n {
		c.Services = append(c.Services, syntheticService(i, now))
		if i%200 == 199 {
			c.Reservations = append(c.Reservations, syntheticReservation(i, now))
		}
	}
	return c
}

func syntheticService(i int, now time.Time) corev1.Service {
	name := fmt.Sprintf("svc-%07d", i)
	svc := corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%02d", i%100), Name: name,
			UID: "0000", ResourceVersion: fmt.Sprint(1000 + i), Labels: map[string]string{"app": name},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(i) * time.Second)), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack), IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	addr := syntheticAddr(i)
	switch {
	case i%100 == 13: // pending
		return svc
	case i%100 == 41: // shares the next one's address
		addr = syntheticAddr(i + 1)
		svc.Annotations["metallb.io/allow-shared-ip"] = "pair"
		svc.Spec.Ports[0].Port = 443
	case i%100 == 42:
		svc.Annotations["metallb.io/allow-shared-ip"] = "pair"
	case i%1000 == 77: // a duplicate of the previous Service's address
		addr = syntheticAddr(i - 1)
	}
	svc.Annotations[AnnotationAllocatedFromPool] = "big"
	svc.Annotations[AnnotationAllocation] = `{"ips":["` + addr.String() + `"]}`
	if i%100 == 27 { // restored: record, no status
		return svc
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr.String(), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
	svc.Status.Conditions = []metav1.Condition{{Type: ConditionAddressAssigned, Status: metav1.ConditionTrue,
		Reason: ReasonAssigned, Message: fmt.Sprintf("assigned [%s] from pool %q", addr, "big")}}
	return svc
}

// syntheticReservation keeps an address beyond the Services' for every
// 200th Service: retained for a deleted Service, for one that does not
// exist yet, or for a pending Service (the 13th of a hundred).
func syntheticReservation(i int, now time.Time) v1alpha1.AddressReservation {
	r := v1alpha1.AddressReservation{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%02d", i%100),
		Name: fmt.Sprintf("keep-%07d", i), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: v1alpha1.AddressReservationSpec{ServiceName: fmt.Sprintf("future-%07d", i),
			Addresses: []string{syntheticAddr(i + 50_000_000).String()}}}
	switch (i / 200) % 4 {
	case 0, 1:
		r.Name, r.Labels = "retained-"+r.Spec.ServiceName, map[string]string{v1alpha1.LabelRetained: "true"}
		r.Spec.ExpiresAt = &metav1.Time{Time: now.Add(time.Hour)}
	case 2:
		pending := i - i%100 - 100 + 13
		r.Namespace, r.Spec.ServiceName = fmt.Sprintf("ns-%02d", pending%100), fmt.Sprintf("svc-%07d", pending)
	}
	return r
}

// syntheticAddr is the pool's i-th address.
func syntheticAddr(i int) netip.Addr {
	a := netip.MustParseAddr("2001:db8:1::").As16()
	a[13], a[14], a[15] = byte(i>>16), byte(i>>8), byte(i)
	return netip.AddrFrom16(a)
}

// BenchmarkReplay times Replay, the startup barrier's restore, order and
// decisions, over synthetic clusters of 10,000 to 1,000,000 Services, and
// reports per Service, what it allocates, and the heap the result keeps.
func BenchmarkReplay(b *testing.B) {
	for _, n := range replaySizes {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			c := syntheticCluster(n)
			base := liveHeap()
			var r *Replayed
			b.ReportAllocs()
			cpu0 := processCPU(b)
			b.ResetTimer()
			for b.Loop() {
				var err error
				if r, err = Replay(c); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := processCPU(b) - cpu0
			checkSynthetic(b, r, n)
			kept := liveHeap() - base
			runtime.KeepAlive(r)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/service")
			// On a shared machine the wall time says how busy it was; the
			// CPU the process spent (the collector's included) is the
			// replay's cost.
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(kept)/1e6, "MB-result")
		})
	}
}

// checkSynthetic asserts the replay decided what the mix says: every
// Service has a verdict, and all but the duplicates' losers and the
// pending ones beyond the pool keep or get an address.
func checkSynthetic(b *testing.B, r *Replayed, n int) {
	b.Helper()
	if len(r.Verdicts) != n {
		b.Fatalf("%d verdicts, want %d", len(r.Verdicts), n)
	}
	steps := map[Step]int{}
	without := 0
	for _, v := range r.Verdicts {
		steps[v.Step]++
		if len(v.Addrs) == 0 {
			without++
		}
	}
	if without != 0 || steps[StepRecalled] != n/100 || steps[StepLost] == 0 || steps[StepPending] < n/100 {
		b.Fatalf("steps %v, %d without an address: not the mix the cluster was built with", steps, without)
	}
	if len(r.Reservations) != n/200 {
		b.Fatalf("%d reservations, want %d", len(r.Reservations), n/200)
	}
}

// processCPU is the user and system time this process has spent.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkParseService is the cost of reading one Service's request, which
// the replay does for every Service.
func BenchmarkParseService(b *testing.B) {
	svc := syntheticService(41, time.Now())
	for b.Loop() {
		if _, err := parseService(&svc); err != nil {
			b.Fatal(err)
		}
	}
}
