package speaker

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// labLabel marks a BGP lab's Nodes. The configuration namespace is shared
// by every test, so each lab's BGPPeers select only its own Nodes, and its
// BGPAdvertisements name only its own pools.
const labLabel = "steadylb-test-lab"

// newBGPLab is newLab with a fake Router on every node.
func newBGPLab(t testing.TB, nodes ...string) *lab {
	t.Helper()
	l := prepareBGPLab(t, nodes...)
	l.startAll()
	return l
}

// prepareBGPLab is newBGPLab without starting the speakers.
func prepareBGPLab(t testing.TB, nodes ...string) *lab {
	t.Helper()
	l := prepareLab(t, nodes...)
	l.routers = map[string]*fakeRouter{}
	for _, n := range nodes {
		l.labelNode(n, labLabel, &l.id)
	}
	return l
}

// bgpPool creates an IPAddressPool with no advertisement.
func (l *lab) bgpPool(name string, addresses ...string) string {
	l.t.Helper()
	full := l.id + "-" + name
	create(l.t, &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: full, Namespace: testenv.Namespace},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: addresses}})
	return full
}

// bgpPeer creates a BGPPeer on the lab's nodes that also carry the labels
// in nodes (none: every lab node), changed by edit. Its name is the
// lab's full name for short.
func (l *lab) bgpPeer(short string, asn uint32, address string, nodes map[string]string, edit func(*v1beta2.BGPPeerSpec)) string {
	l.t.Helper()
	match := map[string]string{labLabel: l.id}
	for k, v := range nodes {
		match[k] = v
	}
	p := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: l.id + "-" + short, Namespace: testenv.Namespace},
		Spec: v1beta2.BGPPeerSpec{MyASN: 64500, ASN: asn, Address: address,
			NodeSelectors: []metav1.LabelSelector{{MatchLabels: match}}}}
	if edit != nil {
		edit(&p.Spec)
	}
	create(l.t, p)
	return p.Name
}

// bgpAdvertisement creates a BGPAdvertisement, changed by edit.
func (l *lab) bgpAdvertisement(short string, spec v1beta1.BGPAdvertisementSpec) string {
	l.t.Helper()
	ad := &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: l.id + "-" + short, Namespace: testenv.Namespace}, Spec: spec}
	create(l.t, ad)
	return ad.Name
}

// edit reads an object, changes it and writes it back.
func edit[T client.Object](t testing.TB, obj T, change func(T)) {
	t.Helper()
	if err := kube().Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %T %s: %v", obj, obj.GetName(), err)
	}
	change(obj)
	if err := kube().Update(ctx, obj); err != nil {
		t.Fatalf("update %T %s: %v", obj, obj.GetName(), err)
	}
}

func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := kube().Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = kube().Delete(context.Background(), obj) })
}

// waitRoutes waits until each lab node's session holds exactly the given
// prefixes: want maps a node's short name to the prefixes (sorted) its
// session to peer holds; a node left out holds none.
func (l *lab) waitRoutes(peer string, want map[string][]string) {
	l.t.Helper()
	fixture.WaitFor(l.t, fmt.Sprintf("routes to %s: %v", peer, want), func() bool {
		for _, n := range l.nodeNames {
			r := l.routers[n]
			if r == nil {
				continue
			}
			if !slices.Equal(r.held(peer), want[n]) {
				return false
			}
		}
		return true
	})
}

// bgpStatuses are the ServiceBGPStatus objects of a Service, by node.
func (l *lab) bgpStatuses(key types.NamespacedName) map[string]v1beta1.ServiceBGPStatus {
	l.t.Helper()
	var list v1beta1.ServiceBGPStatusList
	if err := kube().List(ctx, &list, client.InNamespace(testenv.Namespace), client.MatchingLabels{
		v1beta1.LabelServiceName: key.Name, v1beta1.LabelServiceNamespace: key.Namespace}); err != nil {
		l.t.Fatalf("list ServiceBGPStatus: %v", err)
	}
	out := map[string]v1beta1.ServiceBGPStatus{}
	for _, st := range list.Items {
		out[st.Labels[v1beta1.LabelNode]] = st
	}
	return out
}

// waitBGPStatuses waits until the Service's objects are exactly one per
// node in want, each listing those peers.
func (l *lab) waitBGPStatuses(key types.NamespacedName, want map[string][]string) {
	l.t.Helper()
	full := map[string][]string{}
	for short, peers := range want {
		full[l.node(short)] = peers
	}
	fixture.WaitFor(l.t, fmt.Sprintf("ServiceBGPStatus of %s: %v", key, want), func() bool {
		got := l.bgpStatuses(key)
		if len(got) != len(full) {
			return false
		}
		for node, st := range got {
			if !slices.Equal(st.Status.Peers, full[node]) {
				return false
			}
		}
		return true
	})
}

// exclude sets or clears the exclude-from-external-load-balancers label.
func (l *lab) exclude(short string, on bool) {
	l.t.Helper()
	if on {
		v := ""
		l.labelNode(short, corev1.LabelNodeExcludeBalancers, &v)
		return
	}
	l.labelNode(short, corev1.LabelNodeExcludeBalancers, nil)
}

func ptrTo[T any](v T) *T { return &v }
