package speaker

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestInterfaceExclusions: MetalLB's metallb-excludel2 ConfigMap is
// followed: its patterns reach the announcer at start and on every
// change; a bad entry is reported on the ConfigurationState naming the
// ConfigMap and the entry, the good ones still apply and the addresses
// stay answered; deleting the ConfigMap excludes nothing again.
func TestInterfaceExclusions(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "metallb-excludel2"},
		Data: map[string]string{"excludel2.yaml": "announcedInterfacesToExclude:\n- ^veth.*\n- ^cni.*\n"}}
	if err := kube().Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube().Delete(ctx, cm) })
	l := newLab(t, "a")
	r := l.speakers["a"]
	excluded := func(want ...string) func() bool {
		return func() bool {
			got := r.excluded.Load()
			return got != nil && slices.Equal(*got, want)
		}
	}
	fixture.WaitFor(t, "the ConfigMap's patterns applied at start", excluded("^veth.*", "^cni.*"))
	l.pool("lan", []string{"198.51.100.192/28"})
	l.service("web", []string{"198.51.100.193"}, nil)
	l.waitAnswered("198.51.100.193", "a")

	cm.Data["excludel2.yaml"] = "announcedInterfacesToExclude:\n- ^veth.*\n- ^cali(\n- ^docker.*\n"
	if err := kube().Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the good entries applied", excluded("^veth.*", "^docker.*"))
	want := `ConfigMap metallb-excludel2: data["excludel2.yaml"]: announcedInterfacesToExclude[1] "^cali("`
	fixture.WaitFor(t, "ConfigurationState naming the bad entry", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
	})
	l.service("api", []string{"198.51.100.194"}, nil)
	l.waitAnswered("198.51.100.194", "a")
	l.waitAnswered("198.51.100.193", "a")

	cm.Data["excludel2.yaml"] = "announcedInterfacesToExclude: ["
	if err := kube().Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "an unreadable document reported", func() bool {
		st, ok := l.configurationState("a")
		return ok && strings.Contains(st.Status.ErrorSummary, `ConfigMap metallb-excludel2: data["excludel2.yaml"]`) &&
			!strings.Contains(st.Status.ErrorSummary, "^cali(")
	})
	if !excluded("^veth.*", "^docker.*")() {
		t.Errorf("an unreadable document changed the patterns in use to %v", *r.excluded.Load())
	}

	if err := kube().Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "nothing excluded once the ConfigMap is gone", excluded())
	fixture.WaitFor(t, "ConfigurationState Valid again", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationValid
	})
}

// TestIgnoreExcludeLB: with MetalLB's --ignore-exclude-lb, a node
// labelled node.kubernetes.io/exclude-from-external-load-balancers still
// announces.
func TestIgnoreExcludeLB(t *testing.T) {
	l := prepareLab(t, "a")
	l.ignoreExcludeLB = true
	l.startAll()
	l.labelNode("a", corev1.LabelNodeExcludeBalancers, ptr.To("true"))
	l.pool("lan", []string{"198.51.100.208/28"})
	l.service("web", []string{"198.51.100.209"}, nil)
	l.waitAnswered("198.51.100.209", "a")
}
