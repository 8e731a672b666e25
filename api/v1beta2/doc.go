// Package v1beta2 holds the metallb.io/v1beta2 API types: BGPPeer, the
// storage version of that kind.
//
// +kubebuilder:object:generate=true
// +groupName=metallb.io
package v1beta2
