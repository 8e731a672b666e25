// Package render renders steadylb's manifests the ways users install them,
// with Helm (charts/steadylb) and with kubectl's kustomize (config/), and
// decodes the result into objects for the suites. Helm and promtool are
// the binaries hack/tools.sh builds; a suite that needs one fails, saying
// how to build it, when it is missing.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Objects are rendered manifests, in rendering order.
type Objects struct {
	// Raw is the YAML stream as rendered.
	Raw   []byte
	Items []*unstructured.Unstructured
}

// Decode reads a YAML or JSON stream of objects; empty documents are
// skipped.
func Decode(data []byte) (Objects, error) {
	objs := Objects{Raw: data}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return Objects{}, fmt.Errorf("decode manifests: %w", err)
		}
		if obj != nil {
			objs.Items = append(objs.Items, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Find returns the object of that kind, namespace and name, or nil.
func (o Objects) Find(kind, namespace, name string) *unstructured.Unstructured {
	for _, obj := range o.Items {
		if obj.GetKind() == kind && obj.GetNamespace() == namespace && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

// OfKind returns the objects of the given kinds, in rendering order.
func (o Objects) OfKind(kinds ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range o.Items {
		for _, k := range kinds {
			if obj.GetKind() == k {
				out = append(out, obj)
			}
		}
	}
	return out
}

// Without returns the objects except those of the given kinds.
func (o Objects) Without(kinds ...string) Objects {
	out := Objects{}
	for _, obj := range o.Items {
		keep := true
		for _, k := range kinds {
			keep = keep && obj.GetKind() != k
		}
		if keep {
			out.Items = append(out.Items, obj)
		}
	}
	return out
}

// Into converts the object of that kind, namespace and name into typed,
// e.g. an *appsv1.Deployment.
func (o Objects) Into(kind, namespace, name string, typed any) error {
	obj := o.Find(kind, namespace, name)
	if obj == nil {
		return fmt.Errorf("no %s %s/%s among the %d objects rendered", kind, namespace, name, len(o.Items))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return fmt.Errorf("convert %s %s/%s: %w", kind, namespace, name, err)
	}
	return nil
}

// Tool returns the path of a binary hack/tools.sh builds ("helm", "helm3"
// or "promtool") for the checkout at root, or an error naming the command
// that builds it.
func Tool(root, name string) (string, error) {
	out, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), name, "--path").Output()
	if err != nil {
		return "", fmt.Errorf("ask hack/tools.sh for %s: %w", name, err)
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is not built: run `make tools` once (a few minutes) (missing %s)", name, path)
	}
	return path, nil
}

// Run runs a command with more environment variables ("K=V") and returns
// its stdout; the error carries stderr.
func Run(env []string, name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// Kustomize renders the kustomization in dir with kubectl's built-in
// kustomize, as `kubectl apply -k` would.
func Kustomize(kubectl, dir string) (Objects, error) {
	out, err := Run(nil, kubectl, "kustomize", dir)
	if err != nil {
		return Objects{}, err
	}
	return Decode([]byte(out))
}
