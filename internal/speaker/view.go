package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/lbclass"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/l2decide"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
)

// view reads the caches for one round and remembers what it read, so a
// Service or Node shared by many addresses is read once per round. The
// membership is read once, at the start: every decision of a round sees
// the same live set.
type view struct {
	s        *Speaker
	ctx      context.Context
	live     []string
	liveSet  map[string]bool
	nodes    map[string]facts.Node // live members with a Node; built on first use
	services map[types.NamespacedName]*corev1.Service
}

func (s *Speaker) newView(ctx context.Context) *view {
	live := slices.Clone(s.opts.Membership.Live())
	slices.Sort(live)
	live = slices.Compact(live)
	set := make(map[string]bool, len(live))
	for _, n := range live {
		set[n] = true
	}
	return &view{s: s, ctx: ctx, live: live, liveSet: set,
		services: map[types.NamespacedName]*corev1.Service{}}
}

// service returns a Service if it exists and is ours, else nil.
func (v *view) service(key types.NamespacedName) (*corev1.Service, error) {
	if svc, seen := v.services[key]; seen {
		return svc, nil
	}
	svc := &corev1.Service{}
	err := v.s.cache.Get(v.ctx, key, svc)
	switch {
	case apierrors.IsNotFound(err):
		svc = nil
	case err != nil:
		return nil, fmt.Errorf("get service %s: %w", key, err)
	case !lbclass.Owns(svc, v.s.opts.LBClass):
		svc = nil
	}
	v.services[key] = svc
	return svc, nil
}

// serviceFacts returns what the decisions read of a Service of ours, nil
// for one that is not. What it read in an earlier round stands until the
// round that revisits the Service (Speaker.facts).
func (v *view) serviceFacts(key types.NamespacedName) (*facts.Service, error) {
	if f, seen := v.s.facts[key]; seen {
		return f, nil
	}
	svc, err := v.service(key)
	if err != nil || svc == nil {
		return nil, err
	}
	var list discoveryv1.EndpointSliceList
	if err := v.s.cache.List(v.ctx, &list, client.InNamespace(key.Namespace),
		client.MatchingFields{indexEndpointSlice: key.String()}); err != nil {
		return nil, fmt.Errorf("list EndpointSlices of service %s: %w", key, err)
	}
	f := &facts.Service{Key: key, Labels: labels.Set(svc.Labels),
		Local:     svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		Endpoints: facts.EndpointsOf(list.Items)}
	if f.Local && f.Endpoints.Unplaced > 0 {
		v.s.log.Info("serving endpoints without spec.nodeName count for the Service but make no node eligible under Local policy",
			"service", key, "endpoints", f.Endpoints.Unplaced)
	}
	v.s.facts[key] = f
	return f, nil
}

// liveNodes returns the facts of the live members' Nodes. A member whose
// Node object is missing is left out: it cannot announce.
func (v *view) liveNodes() map[string]facts.Node {
	if v.nodes != nil {
		return v.nodes
	}
	v.nodes = make(map[string]facts.Node, len(v.live))
	for _, name := range v.live {
		node := &corev1.Node{}
		if err := v.s.cache.Get(v.ctx, types.NamespacedName{Name: name}, node); err != nil {
			if !apierrors.IsNotFound(err) {
				v.s.log.Error(err, "get node", "node", name)
			} else {
				v.s.log.V(1).Info("live speaker without a Node object cannot announce", "node", name)
			}
			continue
		}
		v.nodes[name] = v.s.nodeFacts(node)
	}
	return v.nodes
}

// input gathers the decision input for one address.
func (v *view) input(a netip.Addr) (l2decide.Input, error) {
	in := l2decide.Input{Addr: a, Live: v.live, Nodes: v.liveNodes()}
	if v.s.cfg != nil {
		in.Pool, _ = v.s.cfg.PoolFor(a)
	}
	for _, key := range v.s.index.services(a) {
		f, err := v.serviceFacts(key)
		if err != nil {
			return l2decide.Input{}, err
		}
		if f != nil {
			in.Services = append(in.Services, f)
		}
	}
	return in, nil
}

// guards are the other nodes' ServiceL2Status objects that stand for them
// answering one address.
type guards struct {
	// blocking are live nodes with such an object: this node must not
	// answer until they have deleted it.
	blocking []string
	// departed are objects of nodes that are not live; they block nothing
	// and the address's new owner deletes them.
	departed []*v1beta1.ServiceL2Status
}

// othersGuarding finds the other nodes' objects for address a: those that
// list it, and those of its Services that list nothing (MetalLB's, which
// guard every address of their Service).
func (v *view) othersGuarding(a netip.Addr) (guards, error) {
	ns := v.s.opts.Namespace
	found, err := l2status.ForAddress(v.ctx, v.s.cache, ns, a)
	if err != nil {
		return guards{}, err
	}
	for _, svc := range v.s.index.services(a) {
		objs, err := l2status.ForService(v.ctx, v.s.cache, ns, svc)
		if err != nil {
			return guards{}, err
		}
		for i := range objs {
			if _, says := l2status.Addresses(&objs[i]); !says {
				found = append(found, objs[i])
			}
		}
	}
	var g guards
	for i := range found {
		node := l2status.NodeOf(&found[i])
		switch {
		case node == v.s.opts.NodeName:
		case v.liveSet[node]:
			g.blocking = append(g.blocking, node)
		default:
			g.departed = append(g.departed, &found[i])
		}
	}
	slices.Sort(g.blocking)
	g.blocking = slices.Compact(g.blocking)
	return g, nil
}

// nodeFacts reads a Node's facts as this speaker's options say: with
// --ignore-exclude-lb, the exclusion label is ignored (MetalLB's flag).
func (s *Speaker) nodeFacts(n *corev1.Node) facts.Node {
	f := facts.NodeOf(n)
	if s.opts.IgnoreExcludeLB {
		f.Excluded = false
	}
	return f
}
