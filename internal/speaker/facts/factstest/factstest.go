// Package factstest builds facts for the decisions' tests.
package factstest

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/speaker/facts"
)

// Service is a Cluster-policy Service in namespace ns with serving
// endpoints on the given nodes (none: no endpoint names a node).
func Service(name string, nodes ...string) *facts.Service {
	f := &facts.Service{Key: types.NamespacedName{Namespace: "ns", Name: name},
		Endpoints: facts.Endpoints{Serving: true, Nodes: map[string]bool{}}}
	for _, n := range nodes {
		f.Endpoints.Nodes[n] = true
	}
	return f
}
