package speaker

// The speaker's permissions, for `controller-gen rbac` (config/rbac/speaker).
// Every read but the password Secrets' goes through the manager's cache, so
// those reads need list and watch only. Services, EndpointSlices and Nodes
// are cached cluster-wide; the speaker's own objects only in --namespace
// (CacheOptions), so everything on them is granted in metallb-system
// alone; a deployment elsewhere sets the namespace with kustomize. The memberlist key is read from a mounted
// file, never through the API.
//
// What is announced, where: Services, their EndpointSlices, the Nodes.
// +kubebuilder:rbac:groups="",resources=services;nodes,verbs=list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list;watch
//
// nodeAssigned and announceFailed events on Services in any namespace,
// through events.k8s.io.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The configuration.
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=ipaddresspools;l2advertisements;bgpadvertisements;bgppeers;bfdprofiles;communities,verbs=list;watch
//
// The Secrets a BGPPeer's passwordSecret names, in metallb-system only,
// each fetched by name (internal/speaker/bgppasswords): get, never list or
// watch, so the speaker cannot enumerate the namespace's Secrets. RBAC
// cannot narrow get to those names (they are chosen after the Role is
// written).
// +kubebuilder:rbac:groups="",namespace=metallb-system,resources=secrets,verbs=get
//
// MetalLB's interface exclusion ConfigMap, metallb-excludel2 (the cache
// asks for that name only).
// +kubebuilder:rbac:groups="",namespace=metallb-system,resources=configmaps,verbs=list;watch
//
// The other speakers: their Pods' IPs are joined to the membership.
// +kubebuilder:rbac:groups="",namespace=metallb-system,resources=pods,verbs=list;watch
//
// ServiceL2Status: this node's are created, patched and deleted; other
// nodes' are read, and deleted once their node has left.
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=servicel2statuses,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=servicel2statuses/status,verbs=patch
//
// ServiceBGPStatus: this node's are created, patched and deleted.
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=servicebgpstatuses,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=servicebgpstatuses/status,verbs=patch
//
// ConfigurationState "speaker-<node>".
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=configurationstates,verbs=list;watch;create
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=configurationstates/status,verbs=patch
//
// Telling a departure from a restart when the speaker stops (Departing):
// this node, this speaker's Pod and its DaemonSet, read by name, once.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups="",namespace=metallb-system,resources=pods,verbs=get
// +kubebuilder:rbac:groups=apps,namespace=metallb-system,resources=daemonsets,verbs=get
