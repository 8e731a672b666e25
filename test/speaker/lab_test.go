package speaker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

var ctx = context.Background()

func kube() client.Client { return testenv.Shared.Client }

// lab is one test's cluster: its Nodes, a namespace for its Services, and
// a speaker per node, all sharing one membership and one journal. Its
// names carry a random prefix, so labs never see each other's objects.
type lab struct {
	t        *testing.T
	id       string
	ns       string
	journal  *journal
	members  *liveSet
	peers    labels.Selector
	speakers map[string]*running
	// nodeNames are the short names of the lab's nodes, in order.
	nodeNames []string
	settled   int
}

// running is one in-process speaker.
type running struct {
	node     string
	view     *memberView
	registry *prometheus.Registry
	stop     func()
}

// newLab creates the Nodes (labelled kubernetes.io/hostname) and starts
// a speaker on each; all are live.
func newLab(t *testing.T, nodes ...string) *lab {
	t.Helper()
	l := prepareLab(t, nodes...)
	l.startAll()
	return l
}

// prepareLab is newLab without starting the speakers.
func prepareLab(t *testing.T, nodes ...string) *lab {
	t.Helper()
	id := fmt.Sprintf("l%04x", rand.IntN(1<<16))
	l := &lab{t: t, id: id, ns: fixture.Namespace(t), journal: newJournal(), members: &liveSet{},
		peers:    labels.SelectorFromSet(labels.Set{"steadylb-test-lab": id}),
		speakers: map[string]*running{}, nodeNames: nodes}
	t.Cleanup(func() {
		for _, p := range l.journal.problems() {
			t.Errorf("handover rule broken: %s", p)
		}
	})
	for _, n := range nodes {
		l.createNode(n, nil)
	}
	l.live(nodes...)
	// Every node owns one address of the sentinel pool; see settle.
	l.pool("settle", []string{settleRange})
	return l
}

func (l *lab) startAll() {
	l.t.Helper()
	for _, n := range l.nodeNames {
		l.start(n)
	}
}

// node is the full name of a lab node.
func (l *lab) node(short string) string { return l.id + "-" + short }

func (l *lab) createNode(short string, extra map[string]string) {
	l.t.Helper()
	lbls := map[string]string{corev1.LabelHostname: l.node(short)}
	for k, v := range extra {
		lbls[k] = v
	}
	l.createNodeWithLabels(short, lbls)
}

// createNodeWithLabels creates a Node with exactly these labels.
func (l *lab) createNodeWithLabels(short string, lbls map[string]string) {
	l.t.Helper()
	name := l.node(short)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	if err := kube().Create(ctx, node); err != nil {
		l.t.Fatalf("create node %s: %v", name, err)
	}
	l.t.Cleanup(func() { _ = kube().Delete(context.Background(), node) })
}

// start runs a speaker for a lab node and waits until it has applied its
// first decisions.
func (l *lab) start(short string) *running {
	t := l.t
	t.Helper()
	name := l.node(short)
	mgr, err := ctrl.NewManager(testenv.Shared.Config, ctrl.Options{
		Scheme:                 testenv.Shared.Scheme,
		Logger:                 testr.NewWithOptions(t, testr.Options{LogTimestamp: true}).WithValues("speaker", short),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  speaker.CacheOptions(testenv.Namespace, l.peers),
	})
	if err != nil {
		t.Fatalf("create manager for %s: %v", short, err)
	}
	r := &running{node: name, view: l.members.view(), registry: prometheus.NewRegistry()}
	sp, err := speaker.Setup(mgr, speaker.Options{
		NodeName: name, Namespace: testenv.Namespace,
		Announcer:  &fakeAnnouncer{node: name, journal: l.journal, members: l.members, present: []string{"eth0", "eth1"}},
		Membership: r.view, PeerSelector: l.peers, PeerPort: 7946, Registerer: r.registry,
	})
	if err != nil {
		t.Fatalf("set up speaker %s: %v", short, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("speaker %s: %v", short, err)
			}
		case <-time.After(time.Minute):
			t.Errorf("speaker %s did not stop", short)
		}
	}
	t.Cleanup(r.stop)
	select {
	case <-sp.Ready():
	case err := <-done:
		t.Fatalf("speaker %s ended before it was ready: %v", short, err)
	case <-time.After(time.Minute):
		t.Fatalf("speaker %s never became ready", short)
	}
	l.speakers[short] = r
	return r
}

// stop stops a node's speaker, as SIGTERM would.
func (l *lab) stop(short string) {
	l.t.Helper()
	l.speakers[short].stop()
	delete(l.speakers, short)
}

// live sets the live members, by short name.
func (l *lab) live(short ...string) {
	var names []string
	for _, s := range short {
		names = append(names, l.node(s))
	}
	l.members.set(names...)
}

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

// gauge reads a metric of one speaker; ok is false when the series does
// not exist.
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

// settleRange is the sentinel pool every lab creates.
const settleRange = "203.0.113.192/26"

// settle waits until every running speaker has processed every change made
// so far: it creates a Service with one address owned by each live node
// (the hash decides, so it looks for them) and waits until each is
// answered by its owner. Watch events of one kind arrive in order, so a
// test can then assert that something did not happen.
func (l *lab) settle() {
	l.t.Helper()
	l.settled++
	var live []string
	for _, name := range l.members.snapshot() {
		if short := strings.TrimPrefix(name, l.id+"-"); l.speakers[short] != nil {
			live = append(live, short)
		}
	}
	prefix := netip.MustParsePrefix(settleRange)
	chosen := map[string]string{}
	for a := prefix.Addr().Next(); prefix.Contains(a) && len(chosen) < len(live); a = a.Next() {
		owner := l.owner(a.String(), live...)
		if _, ok := chosen[owner]; !ok {
			chosen[owner] = a.String()
		}
	}
	if len(chosen) < len(live) {
		l.t.Fatalf("no sentinel address for some of %v in %s", live, settleRange)
	}
	var addrs []string
	for _, a := range chosen {
		addrs = append(addrs, a)
	}
	key := l.service(fmt.Sprintf("settle-%d", l.settled), addrs, nil)
	for owner, a := range chosen {
		l.waitAnswered(a, owner)
	}
	l.deleteService(key)
	for _, a := range chosen {
		l.waitAnswered(a, "")
	}
}

// labelNode sets (value non-nil) or removes a label of a lab node.
func (l *lab) labelNode(short, key string, value *string) {
	l.t.Helper()
	l.editNode(short, func(n *corev1.Node) {
		if value == nil {
			delete(n.Labels, key)
		} else {
			n.Labels[key] = *value
		}
	})
}

func (l *lab) editNode(short string, edit func(*corev1.Node)) {
	l.t.Helper()
	var n corev1.Node
	if err := kube().Get(ctx, types.NamespacedName{Name: l.node(short)}, &n); err != nil {
		l.t.Fatalf("get node: %v", err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	edit(&n)
	if err := kube().Update(ctx, &n); err != nil {
		l.t.Fatalf("update node %s: %v", n.Name, err)
	}
}

// networkUnavailable sets the node's NetworkUnavailable condition.
func (l *lab) networkUnavailable(short string, unavailable bool) {
	l.t.Helper()
	var n corev1.Node
	if err := kube().Get(ctx, types.NamespacedName{Name: l.node(short)}, &n); err != nil {
		l.t.Fatalf("get node: %v", err)
	}
	status := corev1.ConditionFalse
	if unavailable {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: status,
		LastTransitionTime: metav1.Now(), Reason: "Test"}}
	if err := kube().Status().Update(ctx, &n); err != nil {
		l.t.Fatalf("update node status %s: %v", n.Name, err)
	}
}

// editAdvertisement changes a lab L2Advertisement's spec.
func (l *lab) editAdvertisement(name string, edit func(*v1beta1.L2AdvertisementSpec)) {
	l.t.Helper()
	var ad v1beta1.L2Advertisement
	if err := kube().Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: l.id + "-" + name}, &ad); err != nil {
		l.t.Fatalf("get L2Advertisement: %v", err)
	}
	edit(&ad.Spec)
	if err := kube().Update(ctx, &ad); err != nil {
		l.t.Fatalf("update L2Advertisement %s: %v", ad.Name, err)
	}
}

// createStatus writes a ServiceL2Status as a speaker of node (a full
// name) would have, guarding addrs (nil: no annotation, as MetalLB's).
func (l *lab) createStatus(node string, svc types.NamespacedName, addrs ...string) *v1beta1.ServiceL2Status {
	l.t.Helper()
	st := &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{GenerateName: l2status.NamePrefix, Namespace: testenv.Namespace,
		Labels: map[string]string{v1beta1.LabelNode: node, v1beta1.LabelServiceName: svc.Name, v1beta1.LabelServiceNamespace: svc.Namespace}}}
	if addrs != nil {
		st.Annotations = map[string]string{l2status.AnnotationAddresses: strings.Join(addrs, ",")}
	}
	if err := kube().Create(ctx, st); err != nil {
		l.t.Fatalf("create ServiceL2Status: %v", err)
	}
	l.t.Cleanup(func() { _ = kube().Delete(context.Background(), st) })
	return st
}

// exists reports whether an object is still there.
func exists(obj client.Object) bool {
	err := kube().Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	return err == nil
}
