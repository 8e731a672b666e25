package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// The objects a lab test works with, and the waits on what the speakers
// made of them.

// pool creates an IPAddressPool and an L2Advertisement for it alone,
// changed by opts.
func (l *lab) pool(name string, addresses []string, opts ...func(*v1beta1.L2AdvertisementSpec)) string {
	l.t.Helper()
	full := l.id + "-" + name
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: full, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses}}
	if err := kube().Create(ctx, pool); err != nil {
		l.t.Fatalf("create pool %s: %v", full, err)
	}
	l.t.Cleanup(func() { _ = kube().Delete(context.Background(), pool) })
	spec := v1beta1.L2AdvertisementSpec{IPAddressPools: []string{full}}
	for _, o := range opts {
		o(&spec)
	}
	l.advertisement(name, spec)
	return full
}

func (l *lab) advertisement(name string, spec v1beta1.L2AdvertisementSpec) *v1beta1.L2Advertisement {
	l.t.Helper()
	ad := &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: l.id + "-" + name, Namespace: testenv.Namespace}, Spec: spec}
	if err := kube().Create(ctx, ad); err != nil {
		l.t.Fatalf("create L2Advertisement %s: %v", ad.Name, err)
	}
	l.t.Cleanup(func() { _ = kube().Delete(context.Background(), ad) })
	return ad
}

// service creates a Service showing addrs in its status, as the controller
// would have written them, with a ready endpoint on each of the given
// nodes (none: a ready endpoint with no node).
func (l *lab) service(name string, addrs []string, endpointNodes []string, opts ...fixture.ServiceOption) types.NamespacedName {
	l.t.Helper()
	svc := fixture.Service(l.t, l.ns, name, opts...)
	key := client.ObjectKeyFromObject(svc)
	l.showAddresses(key, addrs...)
	l.endpoints(key, ready(l.nodes(endpointNodes...)...)...)
	return key
}

func (l *lab) nodes(short ...string) []string {
	out := make([]string, len(short))
	for i, s := range short {
		out[i] = l.node(s)
	}
	return out
}

// showAddresses sets status.loadBalancer.ingress.
func (l *lab) showAddresses(key types.NamespacedName, addrs ...string) {
	l.t.Helper()
	var svc corev1.Service
	if err := kube().Get(ctx, key, &svc); err != nil {
		l.t.Fatalf("get service %s: %v", key, err)
	}
	svc.Status.LoadBalancer.Ingress = nil
	for _, a := range addrs {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: a})
	}
	if err := kube().Status().Update(ctx, &svc); err != nil {
		l.t.Fatalf("set status of service %s: %v", key, err)
	}
}

// endpoint is one endpoint of a test EndpointSlice.
type endpoint struct {
	node                        string // full node name; empty: none
	ready, serving, terminating bool
}

func ready(nodes ...string) []endpoint {
	if len(nodes) == 0 {
		return []endpoint{{ready: true}}
	}
	out := make([]endpoint, len(nodes))
	for i, n := range nodes {
		out[i] = endpoint{node: n, ready: true}
	}
	return out
}

// endpoints creates or replaces the Service's one EndpointSlice.
func (l *lab) endpoints(key types.NamespacedName, eps ...endpoint) {
	l.t.Helper()
	slice := &discoveryv1.EndpointSlice{}
	name := types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-eps"}
	err := kube().Get(ctx, name, slice)
	create := err != nil
	if create {
		slice = &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name,
			Labels: map[string]string{discoveryv1.LabelServiceName: key.Name}}, AddressType: discoveryv1.AddressTypeIPv4}
		l.t.Cleanup(func() { _ = kube().Delete(context.Background(), slice) })
	}
	slice.Endpoints = nil
	for i, e := range eps {
		ep := discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("203.0.113.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving || e.ready), Terminating: ptr.To(e.terminating)}}
		if e.node != "" {
			ep.NodeName = ptr.To(e.node)
		}
		slice.Endpoints = append(slice.Endpoints, ep)
	}
	if create {
		err = kube().Create(ctx, slice)
	} else {
		err = kube().Update(ctx, slice)
	}
	if err != nil {
		l.t.Fatalf("write EndpointSlice %s: %v", name, err)
	}
}

// waitAnswered waits until exactly the given lab node (empty: none) answers
// for addr, and every lab speaker has settled on it.
func (l *lab) waitAnswered(addr string, short string) {
	l.t.Helper()
	a := netip.MustParseAddr(addr)
	var want []string
	if short != "" {
		want = []string{l.node(short)}
	}
	fixture.WaitFor(l.t, fmt.Sprintf("%s answered by %v", addr, want), func() bool {
		return slices.Equal(l.journal.answerers(a), want)
	})
}

// statuses are the ServiceL2Status objects of a Service, from the API
// server.
func (l *lab) statuses(key types.NamespacedName) []v1beta1.ServiceL2Status {
	l.t.Helper()
	var list v1beta1.ServiceL2StatusList
	if err := kube().List(ctx, &list, client.InNamespace(testenv.Namespace), client.MatchingLabels{
		v1beta1.LabelServiceName: key.Name, v1beta1.LabelServiceNamespace: key.Namespace}); err != nil {
		l.t.Fatalf("list ServiceL2Status: %v", err)
	}
	return list.Items
}

// statusNodes are the nodes holding an object for a Service, sorted.
func (l *lab) statusNodes(key types.NamespacedName) []string {
	var out []string
	for _, st := range l.statuses(key) {
		out = append(out, st.Labels[v1beta1.LabelNode])
	}
	slices.Sort(out)
	return out
}

// waitStatusNodes waits until exactly these lab nodes hold an object for
// the Service.
func (l *lab) waitStatusNodes(key types.NamespacedName, short ...string) {
	l.t.Helper()
	want := l.nodes(short...)
	slices.Sort(want)
	fixture.WaitFor(l.t, fmt.Sprintf("ServiceL2Status of %s held by %v", key, want), func() bool {
		return slices.Equal(l.statusNodes(key), want)
	})
}

// events are the events about a Service with a reason.
func (l *lab) events(key types.NamespacedName, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	if err := kube().List(ctx, &list, client.InNamespace(key.Namespace)); err != nil {
		return nil
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Service" && e.Regarding.Name == key.Name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an event with reason whose note contains text.
func (l *lab) waitEvent(key types.NamespacedName, reason, text string) eventsv1.Event {
	l.t.Helper()
	var found eventsv1.Event
	fixture.WaitFor(l.t, fmt.Sprintf("a %s event on %s saying %q", reason, key, text), func() bool {
		for _, e := range l.events(key, reason) {
			if strings.Contains(e.Note, text) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// gauge reads a gauge or counter of one speaker; ok is false when the
// series does not exist.
func (r *running) gauge(name string, lbls map[string]string) (float64, bool) {
	families, err := r.registry.Gather()
	if err != nil {
		return 0, false
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, p := range m.GetLabel() {
				have[p.GetName()] = p.GetValue()
			}
			match := true
			for k, v := range lbls {
				if have[k] != v {
					match = false
				}
			}
			if match {
				if c := m.GetCounter(); c != nil {
					return c.GetValue(), true
				}
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// configurationState reads a node's ConfigurationState.
func (l *lab) configurationState(short string) (v1beta1.ConfigurationState, bool) {
	var st v1beta1.ConfigurationState
	err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "speaker-" + l.node(short)}, &st)
	return st, err == nil
}

// owner computes who must win an address among equal candidates: the
// lowest sha256(node + "#" + address), written here independently of the
// code under test.
func (l *lab) owner(addr string, short ...string) string {
	best, bestHash := "", ""
	for _, s := range short {
		h := sha256Hex(l.node(s) + "#" + netip.MustParseAddr(addr).String())
		if best == "" || h < bestHash {
			best, bestHash = s, h
		}
	}
	return best
}

func (l *lab) deleteService(key types.NamespacedName) {
	l.t.Helper()
	if err := kube().Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		l.t.Fatalf("delete service %s: %v", key, err)
	}
}

// localPolicy sets externalTrafficPolicy: Local.
func localPolicy(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
