// Package v1alpha1 holds steadylb's own API types, group steadylb.io: what
// MetalLB has no kind for. MetalLB's kinds stay in metallb.io, unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=steadylb.io
package v1alpha1
