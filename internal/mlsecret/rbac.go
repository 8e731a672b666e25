package mlsecret

// The permissions Filler needs, for `controller-gen rbac` (generated into
// the controller's Role, config/rbac/role.yaml). One Secret is read and
// written by name; RBAC cannot narrow create to a name, which the API
// server learns only from the body. No list or watch: Filler reads through
// the API reader, not a cache, so no other Secret is ever sent to the
// controller. A deployment with another Secret name changes resourceNames
// with its overlay (the Helm chart renders its own).
//
// +kubebuilder:rbac:groups="",namespace=metallb-system,resources=secrets,resourceNames=memberlist,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=metallb-system,resources=secrets,verbs=create
