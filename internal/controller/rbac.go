package controller

// The controller's permissions, for `controller-gen rbac` (config/rbac/role.yaml).
// They follow from how the manager reads: its cache watches Services and
// Namespaces in every namespace, so those need list and watch cluster-wide
// even where the code reads a single object. The caches of steadylb's own
// objects are limited to --namespace (cmd/controller), so everything on them
// is granted only in metallb-system; a deployment into another namespace
// sets it with kustomize's namespace field.
//
// Services: the cache; confirm reads one from the API server (expectations);
// one merge patch to status writes the assignment and our annotations; a
// merge patch of the Service itself is the fallback for an API server that
// drops metadata written through status.
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=patch
//
// Namespaces: their labels decide pool eligibility.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
//
// Events on Services in any namespace. The recorder uses events.k8s.io;
// leader election still records through the core API.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
//
// ConfigurationState "controller": read through the namespaced cache,
// created and written in our namespace.
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=configurationstates,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=configurationstates/status,verbs=patch
//
// IPAddressPools: the namespaced cache, and the counters in their status.
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=ipaddresspools,verbs=get;list;watch
// +kubebuilder:rbac:groups=metallb.io,namespace=metallb-system,resources=ipaddresspools/status,verbs=update
//
// AddressReservations in every namespace: read, their status written, the
// retained ones created, updated and deleted, expired ones deleted.
// +kubebuilder:rbac:groups=steadylb.io,resources=addressreservations,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=steadylb.io,resources=addressreservations/status,verbs=update
//
// IPAddressPools get a Warning event for a bad steadylb.io/retain-for
// (covered by the event rights above).
//
// Leader election: client-go's Lease lock reads, creates and renews one
// Lease, and releases it with an update on shutdown.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=metallb-system,resources=leases,verbs=get;create;update
