package speaker

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestBadInput: each kind of bad input gets a clear report where one is
// due and changes nothing else; a well-formed Service next to them is
// announced throughout.
func TestBadInput(t *testing.T) {
	l := newLab(t, "a", "b", "c")
	l.pool("lan", []string{"198.51.100.208/28"})
	good := l.service("good", []string{"198.51.100.209"}, nil)
	goodOwner := l.owner("198.51.100.209", "a", "b", "c")
	l.waitAnswered("198.51.100.209", goodOwner)

	t.Run("an address in no pool gets one announceFailed event", func(t *testing.T) {
		const addr = "203.0.113.100"
		key := l.service("stray", []string{addr}, nil)
		e := l.waitEvent(key, "announceFailed", "is in no IPAddressPool")
		if e.Type != corev1.EventTypeWarning {
			t.Errorf("event type %s, want Warning", e.Type)
		}
		l.settle()
		if n := len(l.events(key, "announceFailed")); n != 1 {
			t.Errorf("%d announceFailed events, want one (from one node)", n)
		}
		if got := l.journal.answerers(mustAddr(addr)); len(got) != 0 {
			t.Errorf("%s answered by %v", addr, got)
		}
	})

	t.Run("an endpoint without a node makes no node eligible under Local", func(t *testing.T) {
		const addr = "198.51.100.210"
		key := l.service("unplaced", []string{addr}, nil, localPolicy) // its one endpoint names no node
		l.settle()
		if got := l.journal.answerers(mustAddr(addr)); len(got) != 0 {
			t.Errorf("%s answered by %v", addr, got)
		}
		l.endpoints(key, ready(l.node("b"))...)
		l.waitAnswered(addr, "b")
	})

	t.Run("an EndpointSlice for a Service that does not exist", func(t *testing.T) {
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: "orphan",
			Labels: map[string]string{discoveryv1.LabelServiceName: "no-such-service"}}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"203.0.113.9"}, NodeName: ptr.To("no-such-node")}}}
		if err := kube().Create(ctx, slice); err != nil {
			t.Fatalf("create EndpointSlice: %v", err)
		}
		t.Cleanup(func() { _ = kube().Delete(ctx, slice) })
		l.settle()
	})

	t.Run("a live member without a Node object, and a Node without labels, are no candidates", func(t *testing.T) {
		// ghost is live but has no Node; bare has a Node without labels and
		// the advertisement wants the hostname label. Pick an address either
		// would win by the hash.
		l.createNodeWithLabels("bare", map[string]string{})
		l.live("a", "b", "c", "ghost", "bare")
		t.Cleanup(func() { l.live("a", "b", "c") })
		l.editAdvertisement("lan", func(s *v1beta1.L2AdvertisementSpec) {
			s.NodeSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: metav1.LabelSelectorOpExists}}}}
		})
		addr := ""
		for i := 211; i < 224 && addr == ""; i++ {
			a := fmt.Sprintf("198.51.100.%d", i)
			if o := l.owner(a, "a", "b", "c", "ghost", "bare"); o == "ghost" || o == "bare" {
				addr = a
			}
		}
		if addr == "" {
			t.Fatal("no address in the pool that ghost or bare would win")
		}
		key := l.service("picky", []string{addr}, nil)
		want := l.owner(addr, "a", "b", "c")
		l.waitAnswered(addr, want)
		l.waitStatusNodes(key, want)
	})

	l.waitAnswered("198.51.100.209", goodOwner)
	l.waitStatusNodes(good, goodOwner)
	var events []string
	for _, e := range l.events(good, "announceFailed") {
		events = append(events, e.Note)
	}
	if len(events) > 0 {
		t.Errorf("the good Service got announceFailed events: %v", events)
	}
}

// TestJoinsSpeakerPods: the speaker joins the IPs of the speaker Pods on
// other nodes, with the membership port, and not its own.
func TestJoinsSpeakerPods(t *testing.T) {
	l := newLab(t, "a", "b")
	pod := func(name, node, ip string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: l.id + "-" + name,
			Labels: map[string]string{"steadylb-test-lab": l.id}},
			Spec: corev1.PodSpec{NodeName: l.node(node), Containers: []corev1.Container{{Name: "speaker", Image: "speaker"}}}}
		if err := kube().Create(ctx, p); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		t.Cleanup(func() { _ = kube().Delete(ctx, p, client.GracePeriodSeconds(0)) })
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		if err := kube().Status().Update(ctx, p); err != nil {
			t.Fatalf("set pod IPs: %v", err)
		}
	}
	pod("speaker-a", "a", "203.0.113.11")
	pod("speaker-b", "b", "203.0.113.12")
	fixture.WaitFor(t, "a to join b's speaker", func() bool {
		return slices.Contains(l.speakers["a"].view.joinedAddrs(), "203.0.113.12:7946")
	})
	fixture.WaitFor(t, "b to join a's speaker", func() bool {
		return slices.Contains(l.speakers["b"].view.joinedAddrs(), "203.0.113.11:7946")
	})
	if got := l.speakers["a"].view.joinedAddrs(); slices.Contains(got, "203.0.113.11:7946") {
		t.Errorf("a joined its own Pod: %v", got)
	}
}
