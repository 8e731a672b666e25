package speaker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	t        testing.TB
	id       string
	ns       string
	journal  *journal
	members  *liveSet
	peers    labels.Selector
	speakers map[string]*running
	// nodeNames are the short names of the lab's nodes, in order.
	nodeNames []string
	settled   int
	// routers are the nodes' BGP Routers; nil in a layer-2 lab, whose
	// speakers run without BGP.
	routers map[string]*fakeRouter
	// podNames: each speaker is told its Pod is named after its node.
	podNames bool
	// ignoreExcludeLB is the speakers' --ignore-exclude-lb.
	ignoreExcludeLB bool
	// newCache, when set, makes the speakers' caches (see heldStates).
	newCache cache.NewCacheFunc
}

// running is one in-process speaker.
type running struct {
	node     string
	view     *memberView
	registry *prometheus.Registry
	speaker  *speaker.Speaker
	stop     func()
	// excluded are the interface exclusion patterns last applied.
	excluded atomic.Pointer[[]string]
}

// newLab creates the Nodes (labelled kubernetes.io/hostname) and starts
// a speaker on each; all are live.
func newLab(t testing.TB, nodes ...string) *lab {
	t.Helper()
	l := prepareLab(t, nodes...)
	l.startAll()
	return l
}

// prepareLab is newLab without starting the speakers.
func prepareLab(t testing.TB, nodes ...string) *lab {
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
		Logger:                 testr.NewWithInterface(t, testr.Options{LogTimestamp: true}).WithValues("speaker", short),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  speaker.CacheOptions(testenv.Namespace, name, l.peers),
		NewCache:               l.newCache,
	})
	if err != nil {
		t.Fatalf("create manager for %s: %v", short, err)
	}
	r := &running{node: name, view: l.members.view(), registry: prometheus.NewRegistry()}
	opts := speaker.Options{
		NodeName: name, Namespace: testenv.Namespace,
		Announcer:  &fakeAnnouncer{node: name, journal: l.journal, members: l.members, present: []string{"eth0", "eth1"}},
		Membership: r.view, PeerSelector: l.peers, PeerPort: 7946, Registerer: r.registry,
		IgnoreExcludeLB: l.ignoreExcludeLB,
		InterfaceExclusions: func(patterns []*regexp.Regexp) {
			names := []string{}
			for _, p := range patterns {
				names = append(names, p.String())
			}
			r.excluded.Store(&names)
		},
	}
	if l.podNames {
		opts.PodName = name
	}
	if l.routers != nil {
		if l.routers[short] == nil {
			l.routers[short] = newFakeRouter()
		}
		opts.Router = l.routers[short]
	}
	sp, err := speaker.Setup(mgr, opts)
	if err != nil {
		t.Fatalf("set up speaker %s: %v", short, err)
	}
	r.speaker = sp
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
