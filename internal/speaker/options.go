package speaker

import (
	"errors"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/internal/speaker/excludel2"
	"github.com/steadylb/steadylb/internal/speaker/facts"
)

// Options configure a speaker.
type Options struct {
	// NodeName is this node (--node-name).
	NodeName string
	// Namespace holds the configuration, the speaker Pods, the
	// ServiceL2Status objects and the ConfigurationState (--namespace).
	Namespace string
	// LBClass is the --lb-class flag, with the controller's meaning.
	LBClass string
	// PodName is this speaker's Pod. When set, it owns the ServiceL2Status
	// objects, so that they go with it (MetalLB does the same).
	PodName string
	// IgnoreExcludeLB lets nodes labelled
	// node.kubernetes.io/exclude-from-external-load-balancers announce
	// (MetalLB's --ignore-exclude-lb).
	IgnoreExcludeLB bool

	// Announcer answers ARP/NDP on this node.
	Announcer Announcer
	// Membership tells which speakers are alive.
	Membership Membership
	// Router runs this node's BGP sessions. Nil: layer 2 only; the BGP
	// kinds and password Secrets are then not read.
	Router bgp.Router
	// InterfacesChanged, when set, signals that the host's interfaces
	// changed: the speaker asks the Announcer again which interfaces
	// answer, for the ServiceL2Status objects and the ConfigurationState.
	InterfacesChanged <-chan struct{}
	// InterfaceExclusions, when set, is given the interface name patterns
	// of the metallb-excludel2 ConfigMap, once at start and on every
	// change: the wiring passes them to the layer-2 announcer
	// (layer2.Announcer.SetExcluded). Nil: they are read and reported, not
	// applied.
	InterfaceExclusions func([]*regexp.Regexp)
	// LinkReturned, when set, signals that an interface of this node got
	// its carrier back, or that the process stalled (the announcer has
	// stopped answering on its own): the node may have been cut off or
	// frozen, declared dead and replaced, so it stops answering and starts
	// over, as when the membership says it was declared dead (which it
	// learns only a gossip round trip later).
	LinkReturned <-chan struct{}
	// PeerSelector selects the speaker Pods whose IPs are joined to the
	// membership (--ml-labels).
	PeerSelector labels.Selector
	// PeerPort is added to every peer address ("ip:port"); 0 joins bare IPs.
	PeerPort int

	// Stopped, when set, is called during shutdown once this node no longer
	// answers, before its ServiceL2Status objects are deleted: the wiring
	// leaves the membership there, so the other speakers take over at once
	// rather than after the deletions.
	Stopped func()

	// Registerer takes the speaker's metrics; nil means controller-runtime's
	// registry, which the manager serves.
	Registerer prometheus.Registerer
	// WriteParallelism bounds the ServiceL2Status writes in flight at once.
	// Default 32.
	WriteParallelism int
	// StartGrace is how long a speaker that just started, once it has found
	// the other speakers, waits before it starts answering any address:
	// long enough for the current owners to see it in the membership and
	// stop (memberlist's probe and gossip take a few hundred milliseconds),
	// since their objects, written in the background, may not be on the
	// API server yet. Default 1s; negative: none.
	StartGrace time.Duration
	// JoinWait bounds how long a speaker that just started waits to find
	// another live speaker while other speaker Pods exist (they may all be
	// on dead nodes). Default 5s.
	JoinWait time.Duration
	// ShutdownTimeout bounds the clean-up when the speaker stops. Default 5s.
	ShutdownTimeout time.Duration
}

func (o *Options) validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("node name is required"))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if o.Announcer == nil {
		errs = append(errs, errors.New("an announcer is required"))
	}
	if o.Membership == nil {
		errs = append(errs, errors.New("a membership is required"))
	}
	if o.PeerSelector == nil || o.PeerSelector.Empty() {
		errs = append(errs, errors.New("a non-empty peer selector is required"))
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() {
	if o.WriteParallelism <= 0 {
		o.WriteParallelism = 32
	}
	if o.StartGrace == 0 {
		o.StartGrace = time.Second
	}
	if o.JoinWait <= 0 {
		o.JoinWait = 5 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
}

// CacheOptions are the cache settings the speaker of node needs: the
// namespaced kinds watched only in namespace, speaker Pods only with the
// peer labels, this node's own ServiceBGPStatus objects and
// ConfigurationState only (the others' are never read, and there are as
// many ServiceBGPStatus objects as nodes times Services), and the
// cluster-wide kinds trimmed to what the speaker reads, because every node
// runs one and caches all of them. Objects are not deep-copied on read:
// the speaker never changes what it reads.
func CacheOptions(namespace, node string, peers labels.Selector) cache.Options {
	inNamespace := map[string]cache.Config{namespace: {}}
	ownStatuses := labels.SelectorFromSet(labels.Set{v1beta1.LabelNode: node})
	ownState := fields.OneTermEqualSelector("metadata.name", "speaker-"+node)
	shared := ptr.To(true)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Service{}:             {Transform: trimService, UnsafeDisableDeepCopy: shared},
			&discoveryv1.EndpointSlice{}:  {Transform: trimEndpointSlice, UnsafeDisableDeepCopy: shared},
			&corev1.Node{}:                {Transform: trimNode, UnsafeDisableDeepCopy: shared},
			&corev1.Pod{}:                 {Namespaces: inNamespace, Label: peers, Transform: trimPod, UnsafeDisableDeepCopy: shared},
			&v1beta1.IPAddressPool{}:      {Namespaces: inNamespace},
			&v1beta1.L2Advertisement{}:    {Namespaces: inNamespace},
			&v1beta1.ServiceL2Status{}:    {Namespaces: inNamespace, UnsafeDisableDeepCopy: shared},
			&v1beta1.ConfigurationState{}: {Namespaces: inNamespace, Field: ownState},
			&v1beta1.BGPAdvertisement{}:   {Namespaces: inNamespace},
			&v1beta2.BGPPeer{}:            {Namespaces: inNamespace},
			&v1beta1.BFDProfile{}:         {Namespaces: inNamespace},
			&v1beta1.Community{}:          {Namespaces: inNamespace},
			&v1beta1.ServiceBGPStatus{}:   {Namespaces: inNamespace, Label: ownStatuses, UnsafeDisableDeepCopy: shared},
			// Only MetalLB's interface exclusion ConfigMap.
			&corev1.ConfigMap{}: {Namespaces: inNamespace, Field: fields.OneTermEqualSelector("metadata.name", excludel2.ConfigMapName)},
		},
	}
}

// The trims keep what the speaker reads. They must be idempotent: an
// object may pass through twice.

// trimService keeps what the speaker reads of a Service: whether it is
// ours (type, class), its policy, its labels (advertisements' service
// selectors), its addresses, and the identity events refer to. Ports,
// selector, cluster IPs and every annotation (a kubectl-applied Service
// carries its whole last configuration in one) are dropped.
func trimService(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	return &corev1.Service{
		TypeMeta:   s.TypeMeta,
		ObjectMeta: keptMeta(&s.ObjectMeta),
		Spec: corev1.ServiceSpec{Type: s.Spec.Type, LoadBalancerClass: s.Spec.LoadBalancerClass,
			ExternalTrafficPolicy: s.Spec.ExternalTrafficPolicy},
		Status: corev1.ServiceStatus{LoadBalancer: s.Status.LoadBalancer},
	}, nil
}

func trimEndpointSlice(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	s.ManagedFields, s.Annotations, s.Ports = nil, nil, nil
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		ep.TargetRef, ep.Hints, ep.DeprecatedTopology, ep.Zone, ep.Hostname = nil, nil, nil, nil, nil
	}
	return s, nil
}

func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	var kept []corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			kept = append(kept, corev1.NodeCondition{Type: c.Type, Status: c.Status})
		}
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if facts.IsOutOfService(t) {
			taints = append(taints, corev1.Taint{Key: t.Key, Effect: t.Effect})
		}
	}
	return &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: keptMeta(&n.ObjectMeta),
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: kept},
	}, nil
}

func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: keptMeta(&p.ObjectMeta),
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status:     corev1.PodStatus{PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
	}, nil
}

// keptMeta keeps the identity, labels and deletion mark of an object.
func keptMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, Labels: m.Labels, DeletionTimestamp: m.DeletionTimestamp}
}
