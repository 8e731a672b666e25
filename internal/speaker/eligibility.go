package speaker

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// What decides whether a node may announce and whether a Service has
// somewhere to send traffic. Nothing here is specific to layer 2: BGP asks
// the same questions.

// nodeFacts is what eligibility needs from a Node.
type nodeFacts struct {
	name   string
	labels labels.Set
	// networkUnavailable: condition NetworkUnavailable is True.
	networkUnavailable bool
	// excluded: the node carries node.kubernetes.io/exclude-from-external-load-balancers
	// (any value, as Kubernetes reads it), unless --ignore-exclude-lb.
	excluded bool
	// outOfService: the node carries the taint
	// node.kubernetes.io/out-of-service (any value or effect), which an
	// operator sets on a node shut down without draining (Kubernetes'
	// non-graceful node shutdown): it forwards nothing, whatever its
	// speaker last said.
	outOfService bool
}

func nodeFactsOf(n *corev1.Node) nodeFacts {
	f := nodeFacts{name: n.Name, labels: labels.Set(n.Labels)}
	_, f.excluded = n.Labels[corev1.LabelNodeExcludeBalancers]
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue {
			f.networkUnavailable = true
		}
	}
	f.outOfService = slices.ContainsFunc(n.Spec.Taints, isOutOfService)
	return f
}

func isOutOfService(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService }

// usable reports whether the node may announce anything at all.
func (n nodeFacts) usable() bool { return !n.networkUnavailable && !n.excluded && !n.outOfService }

// nodeFacts reads a Node's facts as this speaker's options say: with
// --ignore-exclude-lb, the exclusion label is ignored (MetalLB's flag).
func (s *Speaker) nodeFacts(n *corev1.Node) nodeFacts {
	f := nodeFactsOf(n)
	if s.opts.IgnoreExcludeLB {
		f.excluded = false
	}
	return f
}

// endpointFacts summarises a Service's EndpointSlices.
type endpointFacts struct {
	// serving: at least one endpoint can take traffic, anywhere.
	serving bool
	// nodes with an endpoint that can take traffic.
	nodes map[string]bool
	// unplaced counts serving endpoints that name no node: they count for
	// serving but cannot make a node eligible under Local policy.
	unplaced int
}

// endpointFactsOf reads the endpoints of one Service's slices. O(endpoints).
func endpointFactsOf(slices []discoveryv1.EndpointSlice) endpointFacts {
	f := endpointFacts{nodes: map[string]bool{}}
	for i := range slices {
		if slices[i].AddressType == discoveryv1.AddressTypeFQDN {
			continue // kube-proxy does not route to these either
		}
		for _, ep := range slices[i].Endpoints {
			if !canServe(ep.Conditions) {
				continue
			}
			f.serving = true
			if ep.NodeName == nil || *ep.NodeName == "" {
				f.unplaced++
				continue
			}
			f.nodes[*ep.NodeName] = true
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

// serviceFacts is what the decisions need from one Service.
type serviceFacts struct {
	key    types.NamespacedName
	labels labels.Set
	// local: externalTrafficPolicy Local, so only nodes with a local
	// endpoint may announce.
	local     bool
	endpoints endpointFacts
}

// mayServe reports whether the Service can use a node for its traffic.
func (s *serviceFacts) mayServe(node string) bool {
	return !s.local || s.endpoints.nodes[node]
}
