package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/test/testenv"
)

// image and speakerImage are the placeholder images in config/manager and
// config/speaker; releases override them.
const (
	image        = "ghcr.io/steadylb/controller:latest"
	speakerImage = "ghcr.io/steadylb/speaker:latest"
)

// clusterScoped are the kinds in config/default that live outside any
// namespace; every other object must land in testenv.Namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
}

// rendered is a kustomization as kubectl renders it.
type rendered struct {
	raw     []byte
	objects []*unstructured.Unstructured
}

// render runs kubectl's built-in kustomize on dir and decodes the result.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	out, err := kubectl(nil, "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	r := rendered{raw: []byte(out)}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decode output of kubectl kustomize %s: %v", dir, err)
		}
		if obj != nil {
			r.objects = append(r.objects, &unstructured.Unstructured{Object: obj})
		}
	}
	return r
}

// renderDefault renders config/default, what users apply.
func renderDefault(t *testing.T) rendered {
	t.Helper()
	return render(t, filepath.Join(testenv.Shared.RepoRoot, "config", "default"))
}

// kubectl runs the kubectl built with the control plane, feeding it stdin.
// The error carries stderr; a nil error returns stdout and stderr joined,
// because kubectl prints warnings on stderr.
func kubectl(stdin []byte, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := testenv.Shared.KubectlCmd(args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl %s: %w\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String(), nil
}

// find returns the object of that kind, namespace and name, or nil.
func (r rendered) find(kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ofKind returns the objects of the given kinds, in rendering order.
func (r rendered) ofKind(kinds ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objects {
		for _, k := range kinds {
			if o.GetKind() == k {
				out = append(out, o)
			}
		}
	}
	return out
}

// deployment returns the controller Deployment, typed.
func (r rendered) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	o := r.find("Deployment", testenv.Namespace, "controller")
	if o == nil {
		t.Fatalf("rendered manifests have no Deployment %s/controller", testenv.Namespace)
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		t.Fatalf("convert Deployment: %v", err)
	}
	return &d
}

// daemonSet returns the speaker DaemonSet, typed.
func (r rendered) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	o := r.find("DaemonSet", testenv.Namespace, "speaker")
	if o == nil {
		t.Fatalf("rendered manifests have no DaemonSet %s/speaker", testenv.Namespace)
	}
	var d appsv1.DaemonSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		t.Fatalf("convert DaemonSet: %v", err)
	}
	return &d
}

// asList encodes objects as one kubectl-readable List.
func asList(t *testing.T, objects ...any) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objects})
	if err != nil {
		t.Fatalf("encode objects: %v", err)
	}
	return data
}

// TestDefaultRendersAndIsAccepted renders config/default and has the API
// server validate every object in a server-side dry run: schemas, field
// validation and admission, without changing anything.
func TestDefaultRendersAndIsAccepted(t *testing.T) {
	r := renderDefault(t)

	type ref struct{ kind, namespace, name string }
	want := []ref{
		{"Namespace", "", testenv.Namespace},
		{"ServiceAccount", testenv.Namespace, "controller"},
		{"ClusterRole", "", "steadylb-controller"},
		{"ClusterRoleBinding", "", "steadylb-controller"},
		{"Role", testenv.Namespace, "steadylb-controller"},
		{"RoleBinding", testenv.Namespace, "steadylb-controller"},
		{"Deployment", testenv.Namespace, "controller"},
		{"ServiceAccount", testenv.Namespace, "speaker"},
		{"ClusterRole", "", "steadylb-speaker"},
		{"ClusterRoleBinding", "", "steadylb-speaker"},
		{"Role", testenv.Namespace, "steadylb-speaker"},
		{"RoleBinding", testenv.Namespace, "steadylb-speaker"},
		{"DaemonSet", testenv.Namespace, "speaker"},
		{"Secret", testenv.Namespace, "memberlist"},
	}
	// Every generated CRD must be listed in config/crd/kustomization.yaml.
	crdFiles, err := filepath.Glob(filepath.Join(testenv.Shared.RepoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(crdFiles) == 0 {
		t.Fatalf("find CRD files: %v (found %d)", err, len(crdFiles))
	}
	for _, f := range crdFiles {
		// bases/<group>_<plural>.yaml holds the CRD <plural>.<group>.
		group, plural, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		if !ok {
			t.Fatalf("CRD file %s is not named <group>_<plural>.yaml", f)
		}
		want = append(want, ref{"CustomResourceDefinition", "", plural + "." + group})
	}
	for _, w := range want {
		if r.find(w.kind, w.namespace, w.name) == nil {
			t.Errorf("rendered manifests lack %s %s/%s", w.kind, w.namespace, w.name)
		}
	}
	if len(r.objects) != len(want) {
		t.Errorf("rendered %d objects, want exactly the %d listed", len(r.objects), len(want))
	}
	for _, o := range r.objects {
		if !clusterScoped[o.GetKind()] && o.GetNamespace() != testenv.Namespace {
			t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), testenv.Namespace)
		}
	}

	out, err := kubectl(r.raw, "apply", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "(server dry run)"); n != len(r.objects) {
		t.Errorf("server dry run accepted %d objects, want %d:\n%s", n, len(r.objects), out)
	}
}

// TestDeploymentMeetsRestrictedPodSecurity applies the manifests'
// Namespace, which asks for the restricted Pod Security level, and has
// admission judge the Deployment's pod template. The second row proves
// the check can fail.
func TestDeploymentMeetsRestrictedPodSecurity(t *testing.T) {
	r := renderDefault(t)
	// metallb-system itself is privileged, for the speaker: check the
	// controller against a namespace that enforces restricted.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
	if err := testenv.Shared.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create restricted namespace: %v", err)
	}

	tests := []struct {
		name       string
		change     func(*corev1.PodSpec)
		wantReject bool
	}{
		{"as rendered", func(*corev1.PodSpec) {}, false},
		{"may run as root", func(p *corev1.PodSpec) {
			p.SecurityContext.RunAsNonRoot = ptr.To(false)
			p.SecurityContext.RunAsUser = ptr.To[int64](0)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := r.deployment(t)
			d.Namespace = ns.Name
			tt.change(&d.Spec.Template.Spec)
			out, err := kubectl(asList(t, d), "apply", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out, "would violate PodSecurity"); got != tt.wantReject {
				t.Errorf("Pod Security warning = %v, want %v; kubectl said:\n%s", got, tt.wantReject, out)
			}
		})
	}
}

// TestImageOverride checks that a kustomization on top of config/default
// can replace the placeholder image with `images:`, as a release does.
func TestImageOverride(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(testenv.Shared.RepoRoot, "config", "default")
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatalf("relative path to %s: %v", base, err)
	}
	overlay := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: %s
  newName: registry.example/steadylb/controller
  newTag: v0.0.0-test
- name: %s
  newName: registry.example/steadylb/speaker
  newTag: v0.0.0-test
`, rel, strings.TrimSuffix(image, ":latest"), strings.TrimSuffix(speakerImage, ":latest"))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatalf("write overlay: %v", err)
	}
	for _, tt := range []struct {
		name, dir, wantController, wantSpeaker string
	}{
		{"placeholder", base, image, speakerImage},
		{"overridden", dir, "registry.example/steadylb/controller:v0.0.0-test", "registry.example/steadylb/speaker:v0.0.0-test"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, tt.dir)
			if got := r.deployment(t).Spec.Template.Spec.Containers[0].Image; got != tt.wantController {
				t.Errorf("controller image = %q, want %q", got, tt.wantController)
			}
			if got := r.daemonSet(t).Spec.Template.Spec.Containers[0].Image; got != tt.wantSpeaker {
				t.Errorf("speaker image = %q, want %q", got, tt.wantSpeaker)
			}
		})
	}
}
