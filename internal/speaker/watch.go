package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/speaker/bgpstatus"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/l2status"
	"github.com/steadylb/steadylb/internal/speaker/peerjoin"
)

// indexEndpointSlice is the field index of an EndpointSlice's Service,
// "namespace/name" from the kubernetes.io/service-name label.
const indexEndpointSlice = "speaker.steadylb.io/service"

func indexEndpointSlices(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &discoveryv1.EndpointSlice{}, indexEndpointSlice, func(o client.Object) []string {
		if key, ok := sliceService(o); ok {
			return []string{key.String()}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index EndpointSlices by service: %w", err)
	}
	return nil
}

func sliceService(o client.Object) (types.NamespacedName, bool) {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: name}, true
}

// watch turns cache events into work. Updates that cannot change a
// decision (status heartbeats, unrelated edits) are dropped here.
func (s *Speaker) watch(ctx context.Context) error {
	handlers := []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&corev1.Service{}, handle(s.serviceChanged, when(serviceMatters, s.serviceChanged), s.serviceChanged)},
		{&discoveryv1.EndpointSlice{}, handle(s.sliceChanged, s.sliceUpdated, s.sliceChanged)},
		{&corev1.Node{}, handle(s.everythingChanged, when(nodeMatters, s.everythingChanged), s.everythingChanged)},
		{&v1beta1.IPAddressPool{}, handle(s.configChanged, when(configMatters, s.configChanged), s.configChanged)},
		{&v1beta1.L2Advertisement{}, handle(s.configChanged, when(configMatters, s.configChanged), s.configChanged)},
		{&v1beta1.ServiceL2Status{}, handle(s.othersStatusChanged, when(statusMatters, s.othersStatusChanged), s.statusDeleted)},
		{&v1beta1.ConfigurationState{}, handle(nil, nil, s.stateDeleted)},
		{&corev1.Pod{}, handle(s.peersChanged, when(peerjoin.Matters, s.peersChanged), s.peersChanged)},
		{&corev1.ConfigMap{}, handle(s.exclusionsChanged, func(_, n *corev1.ConfigMap) { s.exclusionsChanged(n) }, s.exclusionsChanged)},
	}
	if s.bgp != nil {
		handlers = append(handlers, []struct {
			obj     client.Object
			handler toolscache.ResourceEventHandler
		}{
			{&v1beta1.BGPAdvertisement{}, handle(s.configChanged, when(configMatters, s.configChanged), s.configChanged)},
			{&v1beta2.BGPPeer{}, handle(s.configChanged, when(configMatters, s.configChanged), s.configChanged)},
			{&v1beta1.BFDProfile{}, handle(s.configChanged, when(configMatters, s.configChanged), s.configChanged)},
			{&v1beta1.Community{}, handle(s.configChanged, when(configMatters, s.configChanged), s.configChanged)},
			{&v1beta1.ServiceBGPStatus{}, handle(nil, nil, s.bgpStatusDeleted)},
		}...)
	}
	for _, h := range handlers {
		inf, err := s.cache.GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("watch %T: %w", h.obj, err)
		}
		if _, err := inf.AddEventHandler(h.handler); err != nil {
			return fmt.Errorf("watch %T: %w", h.obj, err)
		}
	}
	return nil
}

// handle builds a handler for objects of type T. A nil function ignores
// that kind of event.
func handle[T client.Object](onAdd func(T), onUpdate func(old, new T), onDelete func(T)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok && onAdd != nil {
				onAdd(o)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := oldObj.(T)
			n, okNew := newObj.(T)
			if okOld && okNew && onUpdate != nil {
				onUpdate(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(T); ok && onDelete != nil {
				onDelete(o)
			}
		},
	}
}

// when calls do with the new object of an update that matters.
func when[T client.Object](matters func(old, new T) bool, do func(T)) func(old, new T) {
	return func(old, new T) {
		if matters(old, new) {
			do(new)
		}
	}
}

func (s *Speaker) serviceChanged(svc *corev1.Service) {
	s.queue.Add(forService(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}))
}

// serviceMatters: what the speaker reads of a Service changed.
func serviceMatters(old, new *corev1.Service) bool {
	return !equality.Semantic.DeepEqual(old.Spec.LoadBalancerClass, new.Spec.LoadBalancerClass) ||
		old.Spec.Type != new.Spec.Type ||
		old.Spec.ExternalTrafficPolicy != new.Spec.ExternalTrafficPolicy ||
		!equality.Semantic.DeepEqual(old.Labels, new.Labels) ||
		!equality.Semantic.DeepEqual(old.Status.LoadBalancer.Ingress, new.Status.LoadBalancer.Ingress)
}

func (s *Speaker) sliceChanged(slice *discoveryv1.EndpointSlice) {
	if key, ok := sliceService(slice); ok {
		s.queue.Add(forService(key))
	}
}

// sliceUpdated revisits the Service of a slice whose endpoints changed,
// and both Services when the slice moved from one to another.
func (s *Speaker) sliceUpdated(old, new *discoveryv1.EndpointSlice) {
	if old.Labels[discoveryv1.LabelServiceName] != new.Labels[discoveryv1.LabelServiceName] {
		s.sliceChanged(old)
		s.sliceChanged(new)
		return
	}
	if !equality.Semantic.DeepEqual(old.Endpoints, new.Endpoints) {
		s.sliceChanged(new)
	}
}

func (s *Speaker) everythingChanged(*corev1.Node) { s.queue.Add(everything) }

// nodeMatters: labels, NetworkUnavailable or the out-of-service taint
// changed; heartbeats do not matter.
func nodeMatters(old, new *corev1.Node) bool {
	o, n := facts.NodeOf(old), facts.NodeOf(new)
	return o.NetworkUnavailable != n.NetworkUnavailable || o.OutOfService != n.OutOfService ||
		!equality.Semantic.DeepEqual(old.Labels, new.Labels)
}

func (s *Speaker) configChanged(client.Object) { s.queue.Add(reloadConfig) }

// configMatters: the spec (generation) or the labels (pool selectors)
// changed; pool status updates, a few a second, do not matter.
func configMatters(old, new client.Object) bool {
	return old.GetGeneration() != new.GetGeneration() || !equality.Semantic.DeepEqual(old.GetLabels(), new.GetLabels())
}

// othersStatusChanged revisits what another node's object guards: its
// arrival may block this node, its departure may let this node start.
// This node's own writes come back here too and are skipped.
func (s *Speaker) othersStatusChanged(st *v1beta1.ServiceL2Status) {
	if l2status.NodeOf(st) == s.opts.NodeName {
		return
	}
	s.statusDeleted(st)
}

func statusMatters(old, new *v1beta1.ServiceL2Status) bool {
	return !equality.Semantic.DeepEqual(old.Labels, new.Labels) || !equality.Semantic.DeepEqual(old.Annotations, new.Annotations)
}

// statusDeleted revisits the Service and the addresses of a deleted
// object: the handover waits for it, and this node's own object may have
// been deleted under it and must be written again.
func (s *Speaker) statusDeleted(st *v1beta1.ServiceL2Status) {
	if l2status.NodeOf(st) == s.opts.NodeName {
		s.objects.Lost(st)
	}
	if svc, ok := l2status.ServiceOf(st); ok {
		s.queue.Add(forService(svc))
	}
	addrs, _ := l2status.Addresses(st)
	for _, a := range addrs {
		s.queue.Add(forAddress(a))
	}
}

// bgpStatusDeleted writes this node's object again when someone else
// deleted it while the node still advertises its Service.
func (s *Speaker) bgpStatusDeleted(st *v1beta1.ServiceBGPStatus) {
	if bgpstatus.NodeOf(st) == s.opts.NodeName {
		s.bgpObjects.Lost(st)
	}
}

func (s *Speaker) stateDeleted(st *v1beta1.ConfigurationState) {
	if st.Namespace == s.opts.Namespace && st.Name == s.stateName() {
		s.queue.Add(rewriteState)
	}
}

func (s *Speaker) peersChanged(*corev1.Pod) { s.peers.Poke() }

// exclusionsChanged: the cache holds only the exclusion ConfigMap
// (CacheOptions), so any event is about it.
func (s *Speaker) exclusionsChanged(*corev1.ConfigMap) { s.queue.Add(reloadExclusions) }

// statusAddresses are the addresses a Service shows, sorted, deduplicated;
// an entry that does not parse is returned in bad.
func statusAddresses(svc *corev1.Service) (addrs []netip.Addr, bad []string) {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP == "" {
			continue // a hostname entry: nothing to answer ARP for
		}
		a, err := netip.ParseAddr(in.IP)
		if err != nil {
			bad = append(bad, in.IP)
			continue
		}
		addrs = append(addrs, a.Unmap())
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs), bad
}
