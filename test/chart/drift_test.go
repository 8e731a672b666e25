package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadylb/steadylb/test/render"
	"github.com/steadylb/steadylb/test/testenv"
)

// onlyInKustomize and onlyInHelm are the objects one way of installing
// has and the other has not, and why.
var (
	onlyInKustomize = map[string]string{
		"Namespace /metallb-system": "Helm installs into a namespace it does not own (--create-namespace)",
	}
	onlyInHelm = map[string]string{
		"ValidatingAdmissionPolicy /steadylb-configuration":        "admissionPolicy.enabled; cluster-wide, so not in the base",
		"ValidatingAdmissionPolicyBinding /steadylb-configuration": "admissionPolicy.enabled",
		"ConfigMap metallb-system/metallb-excludel2":               "MetalLB's chart renders it; its manifests do not",
	}
)

func ref(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// defaulted has the API server default objs in a server-side dry run and
// returns them as it would store them.
func defaulted(t *testing.T, objs render.Objects) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := kubectlIn(asList(t, objs.Items), "apply", "--dry-run=server", "-o", "json", "-f", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	list, err := render.Decode([]byte(out))
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("decode the dry run's output (%v):\n%s", err, out)
	}
	items, _, _ := unstructured.NestedSlice(list.Items[0].Object, "items")
	byRef := map[string]*unstructured.Unstructured{}
	for _, it := range items {
		o := &unstructured.Unstructured{Object: it.(map[string]any)}
		byRef[ref(o)] = o
	}
	if len(byRef) != len(objs.Items) {
		t.Fatalf("the dry run returned %d objects for %d", len(byRef), len(objs.Items))
	}
	return byRef
}

// compared is the part of an object both installs must agree on: what it
// grants, runs or holds, not its labels or the API server's bookkeeping.
func compared(o *unstructured.Unstructured) any {
	get := func(fields ...string) any {
		v, _, _ := unstructured.NestedFieldCopy(o.Object, fields...)
		return v
	}
	switch o.GetKind() {
	case "ClusterRole", "Role":
		return get("rules")
	case "ClusterRoleBinding", "RoleBinding":
		return []any{get("roleRef"), get("subjects")}
	case "Deployment", "DaemonSet":
		spec := get("spec").(map[string]any)
		template := spec["template"].(map[string]any)
		delete(template, "metadata") // Helm adds app.kubernetes.io labels
		return spec
	case "CustomResourceDefinition":
		return get("spec")
	case "Secret":
		return []any{get("type"), get("data")}
	case "ConfigMap":
		return get("data")
	case "ServiceAccount", "Namespace":
		return get("automountServiceAccountToken")
	}
	return o.Object
}

// TestKustomizeAndHelmAgree renders config/default and the chart with
// default values, has the API server default both (server-side dry run),
// and compares them object by object: the same objects under the same
// names, the same RBAC rules, and the same pod specs (args, env, probes,
// security contexts, volumes, resources). Generated RBAC and CRDs reach
// the chart through `make generate`, so a change to the code's RBAC
// markers that was not regenerated fails here too.
func TestKustomizeAndHelmAgree(t *testing.T) {
	kust, err := render.Kustomize(testenv.Shared.Kubectl, filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	// config/default's placeholder images are tagged latest (which the API
	// server defaults to pull Always), the chart's with its appVersion:
	// render the chart with config/default's tag so the images compare too.
	k, h := defaulted(t, kust), defaulted(t, template(t, "--set", "controller.image.tag=latest,speaker.image.tag=latest"))
	for r := range k {
		if _, ok := h[r]; !ok && onlyInKustomize[r] == "" {
			t.Errorf("%s is in config/default but not in the chart", r)
		}
	}
	for r := range h {
		if _, ok := k[r]; !ok && onlyInHelm[r] == "" {
			t.Errorf("%s is in the chart but not in config/default", r)
		}
	}
	n := 0
	for r, ko := range k {
		ho, ok := h[r]
		if !ok {
			continue
		}
		n++
		if diff := cmp.Diff(compared(ko), compared(ho)); diff != "" {
			t.Errorf("%s differs (-kustomize +helm):\n%s", r, diff)
		}
	}
	if n < 15 {
		t.Errorf("compared %d objects: too few to mean anything", n)
	}
	t.Logf("compared %d objects", n)
}

// TestBothPinImagesByDigest points each install at images by digest, as
// `make images` prints them: the chart with image.digest, config/default
// with an overlay's images: digest.
func TestBothPinImagesByDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	base, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + base + "\nimages:\n" +
		"- name: ghcr.io/steadylb/controller\n  newName: registry.test/steadylb/controller\n  digest: " + digest + "\n" +
		"- name: ghcr.io/steadylb/speaker\n  newName: registry.test/steadylb/speaker\n  digest: " + digest + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	kust, err := render.Kustomize(testenv.Shared.Kubectl, dir)
	if err != nil {
		t.Fatal(err)
	}
	chart := template(t, "--set", "controller.image.repository=registry.test/steadylb/controller,controller.image.digest="+digest,
		"--set", "speaker.image.repository=registry.test/steadylb/speaker,speaker.image.digest="+digest)
	for _, objs := range []render.Objects{kust, chart} {
		w := workloadsOf(t, objs)
		if c, s := w.controllerC().Image, w.speakerC().Image; c != "registry.test/steadylb/controller@"+digest ||
			s != "registry.test/steadylb/speaker@"+digest {
			t.Errorf("images %s and %s, want both by digest", c, s)
		}
	}
}
