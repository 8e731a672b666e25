package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPAddressPoolSpec is the set of addresses steadylb may give to Services and
// the rules for giving them out.
type IPAddressPoolSpec struct {
	// Addresses lists the ranges this pool owns. Each entry is a CIDR
	// ("192.0.2.0/24", "2001:db8::/64") or an inclusive range
	// ("192.0.2.10-192.0.2.20"). IPv4 and IPv6 entries may be mixed.
	Addresses []string `json:"addresses"`

	// AutoAssign lets the controller pick addresses from this pool for
	// Services that did not ask for a pool or an address. Explicit requests
	// ignore it.
	// +optional
	// +kubebuilder:default:=true
	AutoAssign *bool `json:"autoAssign,omitempty"`

	// AvoidBuggyIPs skips IPv4 addresses ending in .0 and .255, which some
	// clients treat as network or broadcast addresses.
	// +optional
	// +kubebuilder:default:=false
	AvoidBuggyIPs bool `json:"avoidBuggyIPs,omitempty"`

	// ServiceAllocation restricts the pool to some namespaces and Services and
	// orders it against other pools.
	// +optional
	ServiceAllocation *ServiceAllocation `json:"serviceAllocation,omitempty"`
}

// ServiceAllocation restricts which Services a pool serves and sets its
// priority for automatic allocation.
type ServiceAllocation struct {
	// Priority orders pools for automatic allocation: lower values first.
	// Pools without a priority (0) come after every pool that has one.
	// +optional
	Priority int `json:"priority,omitempty"`

	// Namespaces whose Services this pool serves.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelectors select, by label, namespaces whose Services this
	// pool serves.
	// +optional
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`

	// ServiceSelectors select, by label, the Services this pool serves.
	// +optional
	ServiceSelectors []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// IPAddressPoolStatus reports how much of the pool is in use.
type IPAddressPoolStatus struct {
	// AssignedIPv4 is the number of IPv4 addresses held by Services.
	AssignedIPv4 int64 `json:"assignedIPv4"`
	// AssignedIPv6 is the number of IPv6 addresses held by Services.
	AssignedIPv6 int64 `json:"assignedIPv6"`
	// AvailableIPv4 is the number of IPv4 addresses still free.
	AvailableIPv4 int64 `json:"availableIPv4"`
	// AvailableIPv6 is the number of IPv6 addresses still free, saturated
	// at the largest int64.
	AvailableIPv6 int64 `json:"availableIPv6"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Auto Assign",type=boolean,JSONPath=`.spec.autoAssign`
// +kubebuilder:printcolumn:name="Avoid Buggy IPs",type=boolean,JSONPath=`.spec.avoidBuggyIPs`
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.spec.addresses`

// IPAddressPool is a pool of addresses for Services of type LoadBalancer.
type IPAddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPAddressPoolSpec   `json:"spec"`
	Status IPAddressPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// IPAddressPoolList is a list of IPAddressPools.
type IPAddressPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPAddressPool `json:"items"`
}

func init() {
	register(&IPAddressPool{}, &IPAddressPoolList{})
}
