package fixedmapper

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping questions that reach it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestRESTMapping(t *testing.T) {
	service := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	node := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	later := schema.GroupVersionKind{Group: "metallb.io", Version: "v1beta1", Kind: "ServiceL2Status"}
	inner := meta.NewDefaultRESTMapper(nil)
	inner.Add(service, meta.RESTScopeNamespace)
	inner.Add(node, meta.RESTScopeRoot)
	counting := &countingMapper{RESTMapper: inner}
	m := New(counting)

	for _, tc := range []struct {
		name      string
		gvk       schema.GroupVersionKind
		scope     meta.RESTScopeName
		wantErr   bool
		wantAsked int // questions that reached the wrapped mapper so far
	}{
		{name: "first question is asked", gvk: service, scope: meta.RESTScopeNameNamespace, wantAsked: 1},
		{name: "second is answered from memory", gvk: service, scope: meta.RESTScopeNameNamespace, wantAsked: 1},
		{name: "another kind is asked", gvk: node, scope: meta.RESTScopeNameRoot, wantAsked: 2},
		{name: "a kind not served yet fails", gvk: later, wantErr: true, wantAsked: 3},
		{name: "and its failure is not remembered", gvk: later, wantErr: true, wantAsked: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
			switch {
			case tc.wantErr && err == nil:
				t.Fatalf("RESTMapping(%v) = %v, want an error", tc.gvk, got)
			case !tc.wantErr && err != nil:
				t.Fatalf("RESTMapping(%v): %v", tc.gvk, err)
			case !tc.wantErr && got.Scope.Name() != tc.scope:
				t.Errorf("scope of %v = %q, want %q", tc.gvk, got.Scope.Name(), tc.scope)
			}
			if counting.asked != tc.wantAsked {
				t.Errorf("the wrapped mapper was asked %d times, want %d", counting.asked, tc.wantAsked)
			}
		})
	}

	// A kind installed later is found once it is served.
	inner.Add(later, meta.RESTScopeNamespace)
	if _, err := m.RESTMapping(later.GroupKind(), later.Version); err != nil {
		t.Fatalf("RESTMapping(%v) after it was added: %v", later, err)
	}
}

func TestVersionsAreTheirOwnQuestion(t *testing.T) {
	v1 := schema.GroupVersionKind{Group: "metallb.io", Version: "v1beta1", Kind: "BGPPeer"}
	v2 := schema.GroupVersionKind{Group: "metallb.io", Version: "v1beta2", Kind: "BGPPeer"}
	inner := meta.NewDefaultRESTMapper(nil)
	inner.Add(v1, meta.RESTScopeNamespace)
	inner.Add(v2, meta.RESTScopeNamespace)
	m := New(inner)
	for _, gvk := range []schema.GroupVersionKind{v1, v2, v1} {
		got, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("RESTMapping(%v): %v", gvk, err)
		}
		if got.GroupVersionKind != gvk {
			t.Errorf("RESTMapping(%v) answered for %v", gvk, got.GroupVersionKind)
		}
	}
}
