// Package v1beta1 holds the metallb.io/v1beta1 API types that steadylb serves.
//
// Field names and JSON tags match MetalLB's so that existing MetalLB YAML
// applies unchanged. Defaults and the checks the API server can enforce on its
// own are declared here as kubebuilder markers and CEL rules; checks that need
// more than one object (overlapping pools, unknown references) live in
// internal/config.
//
// +kubebuilder:object:generate=true
// +groupName=metallb.io
package v1beta1
