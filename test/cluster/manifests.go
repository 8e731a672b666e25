package cluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Manifests are a kustomization as kustomize renders it: what a user
// applies.
type Manifests struct {
	Objects []*unstructured.Unstructured
}

// Render renders the kustomization in dir with the kustomize API (the
// library kubectl's `apply -k` runs).
func Render(dir string) (*Manifests, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: kustomize %s: %w", dir, err)
	}
	m := &Manifests{}
	for _, r := range res.Resources() {
		obj, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("cluster: kustomize %s: %w", dir, err)
		}
		m.Objects = append(m.Objects, &unstructured.Unstructured{Object: obj})
	}
	return m, nil
}

func (m *Manifests) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// Deployment returns the Deployment called name.
func (m *Manifests) Deployment(name string) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	return &d, m.typed("Deployment", name, &d)
}

// DaemonSet returns the DaemonSet called name.
func (m *Manifests) DaemonSet(name string) (*appsv1.DaemonSet, error) {
	var d appsv1.DaemonSet
	return &d, m.typed("DaemonSet", name, &d)
}

func (m *Manifests) typed(kind, name string, into any) error {
	o := m.find(kind, name)
	if o == nil {
		return fmt.Errorf("cluster: the manifests have no %s %s", kind, name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		return fmt.Errorf("cluster: %s %s: %w", kind, name, err)
	}
	return nil
}

// identityKinds are the objects that give the workloads their identity
// and configuration: applied before the processes start, as `kubectl
// apply` would have created them. Namespace and CRDs are the control
// plane's (test/testenv); workloads become processes.
var identityKinds = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"Secret": true, "ConfigMap": true,
}

// ApplyIdentity applies the ServiceAccounts, RBAC, Secrets and ConfigMaps
// with server-side apply. An object that already exists keeps the fields
// others own (a Secret's key written by a user or a controller).
func (m *Manifests) ApplyIdentity(ctx context.Context, c client.Client) error {
	for _, o := range m.Objects {
		if !identityKinds[o.GetKind()] {
			continue
		}
		ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
		if err := c.Apply(ctx, ac, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
			return fmt.Errorf("cluster: apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
