package speaker

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/testenv"
)

// TestDeparting: a speaker tells a node leaving for good (cordoned or
// drained, out of service, or its DaemonSet deleted with its Pod) from a
// restart of its own (a Pod deleted while its DaemonSet stays, as a
// rolling update does), so that its BGP sessions withdraw the routes in
// the first case and keep graceful restart in the second. Each case sets
// one condition and clears it, so every verdict is seen both ways.
func TestDeparting(t *testing.T) {
	l := prepareLab(t, "a")
	l.podNames = true
	name := l.node("a")
	labels := map[string]string{"app": "speaker-" + l.id}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "speaker-" + l.id, Namespace: testenv.Namespace},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "speaker", Image: "speaker"}}}}}}
	create(t, ds)
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.Namespace, Labels: labels,
		// Kept while deleted, as a kubelet keeps a terminating Pod.
		Finalizers:      []string{"steadylb.io/test"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "speaker", Image: "speaker"}}}}
	create(t, pod)
	t.Cleanup(func() {
		edit(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.Namespace}}, func(p *corev1.Pod) { p.Finalizers = nil })
	})
	sp := l.start("a").speaker
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	check := func(what string, want bool) {
		t.Helper()
		if got := sp.Departing(context.Background()); got != want {
			t.Errorf("%s: Departing = %v, want %v", what, got, want)
		}
	}

	check("a running node and Pod", false)
	edit(t, node, func(n *corev1.Node) { n.Spec.Unschedulable = true })
	check("a cordoned node", true)
	edit(t, node, func(n *corev1.Node) { n.Spec.Unschedulable = false })
	edit(t, node, func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
	})
	check("a node out of service", true)
	edit(t, node, func(n *corev1.Node) { n.Spec.Taints = nil })
	check("the node back in service", false)

	if err := kube().Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	check("the Pod deleted, its DaemonSet staying (a rolling update)", false)
	if err := kube().Delete(ctx, ds, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	check("the Pod deleted with its DaemonSet", true)
}
