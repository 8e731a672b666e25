package chart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/test/render"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestUpgradeKeepsMemberlistKey installs the chart for real, writes a key
// into the memberlist Secret as the controller does, upgrades the release
// with changed values, and checks that the key is still there while the
// upgrade did change what it was asked to. Helm v4 (server-side apply)
// and v3 (three-way merge) each get a release of their own. The CRDs are
// the control plane's, installed before the suite, so the release leaves
// them out; the admission policy is tested on its own.
func TestUpgradeKeepsMemberlistKey(t *testing.T) {
	for _, h := range []struct {
		name string
		helm *render.Helm
	}{{"v4", helm}, {"v3", helm3}} {
		t.Run(h.name, func(t *testing.T) {
			kc := "--kubeconfig=" + testenv.Shared.Kubeconfig
			base := []string{h.helm.Chart, "--namespace", ns, kc, "--set", "crds.enabled=false,admissionPolicy.enabled=false"}
			if out, err := h.helm.Run(append([]string{"install", render.ReleaseName}, base...)...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Cleanup(func() {
				if out, err := h.helm.Run("uninstall", render.ReleaseName, "--namespace", ns, kc, "--wait"); err != nil {
					t.Errorf("uninstall: %v\n%s", err, out)
				}
			})

			c := testenv.Shared.Client
			key := types.NamespacedName{Namespace: ns, Name: "memberlist"}
			var sec corev1.Secret
			if err := c.Get(ctx, key, &sec); err != nil {
				t.Fatalf("the release has no memberlist Secret: %v", err)
			}
			if len(sec.Data["secretkey"]) != 0 {
				t.Fatalf("the Secret came with a key: %q", sec.Data["secretkey"])
			}
			// What the controller does once it leads: add a key to the
			// empty Secret, with an update.
			want := []byte("c3RlYWR5bGItdGVzdC1rZXktMzItYnl0ZXMhISE=")
			sec.Data = map[string][]byte{"secretkey": want}
			if err := c.Update(ctx, &sec); err != nil {
				t.Fatalf("write the key: %v", err)
			}

			upgrade := append([]string{"upgrade", render.ReleaseName}, base...)
			upgrade = append(upgrade, "--set", "controller.logLevel=debug,speaker.ignoreExcludeLB=true")
			if out, err := h.helm.Run(upgrade...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}

			var d appsv1.Deployment
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "controller"}, &d); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--log-level=debug") {
				t.Fatalf("the upgrade did not reach the Deployment: args %q", d.Spec.Template.Spec.Containers[0].Args)
			}
			if err := c.Get(ctx, key, &sec); err != nil {
				t.Fatal(err)
			}
			if got := sec.Data["secretkey"]; string(got) != string(want) {
				t.Errorf("after the upgrade the key is %q, want the controller's %q", got, want)
			}
		})
	}
}
