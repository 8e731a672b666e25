package facts

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Node is what eligibility needs from a Node.
type Node struct {
	Name   string
	Labels labels.Set
	// NetworkUnavailable: condition NetworkUnavailable is True.
	NetworkUnavailable bool
	// Excluded: the node carries node.kubernetes.io/exclude-from-external-load-balancers
	// (any value, as Kubernetes reads it); the speaker clears it under
	// --ignore-exclude-lb.
	Excluded bool
	// OutOfService: the node carries the taint
	// node.kubernetes.io/out-of-service (any value or effect), which an
	// operator sets on a node shut down without draining (Kubernetes'
	// non-graceful node shutdown): it forwards nothing, whatever its
	// speaker last said.
	OutOfService bool
}

func NodeOf(n *corev1.Node) Node {
	f := Node{Name: n.Name, Labels: labels.Set(n.Labels)}
	_, f.Excluded = n.Labels[corev1.LabelNodeExcludeBalancers]
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue {
			f.NetworkUnavailable = true
		}
	}
	f.OutOfService = slices.ContainsFunc(n.Spec.Taints, IsOutOfService)
	return f
}

func IsOutOfService(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService }

// Usable reports whether the node may announce anything at all.
func (n Node) Usable() bool { return !n.NetworkUnavailable && !n.Excluded && !n.OutOfService }

// Endpoints summarises a Service's EndpointSlices.
type Endpoints struct {
	// Serving: at least one endpoint can take traffic, anywhere.
	Serving bool
	// Nodes with an endpoint that can take traffic.
	Nodes map[string]bool
	// Unplaced counts serving endpoints that name no node: they count for
	// serving but cannot make a node eligible under Local policy.
	Unplaced int
}

// EndpointsOf reads the endpoints of one Service's slices. O(endpoints).
func EndpointsOf(slices []discoveryv1.EndpointSlice) Endpoints {
	f := Endpoints{Nodes: map[string]bool{}}
	for i := range slices {
		if slices[i].AddressType == discoveryv1.AddressTypeFQDN {
			continue // kube-proxy does not route to these either
		}
		for _, ep := range slices[i].Endpoints {
			if !canServe(ep.Conditions) {
				continue
			}
			f.Serving = true
			if ep.NodeName == nil || *ep.NodeName == "" {
				f.Unplaced++
				continue
			}
			f.Nodes[*ep.NodeName] = true
		}
	}
	return f
}

// canServe: ready, or serving, and not terminating. An unset ready
// condition means ready (the API's rule); an unset serving one means what
// ready means.
func canServe(c discoveryv1.EndpointConditions) bool {
	if c.Terminating != nil && *c.Terminating {
		return false
	}
	ready := c.Ready == nil || *c.Ready
	serving := c.Serving != nil && *c.Serving
	return ready || serving
}

// Service is what the decisions need from one Service.
type Service struct {
	Key    types.NamespacedName
	Labels labels.Set
	// Local: externalTrafficPolicy Local, so only nodes with a Local
	// endpoint may announce.
	Local     bool
	Endpoints Endpoints
}

// MayServe reports whether the Service can use a node for its traffic.
func (s *Service) MayServe(node string) bool {
	return !s.Local || s.Endpoints.Nodes[node]
}
