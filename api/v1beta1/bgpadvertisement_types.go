package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BGPAdvertisementSpec says which pools are announced over BGP, with which
// attributes, to which peers and from which nodes.
type BGPAdvertisementSpec struct {
	// AggregationLength is the prefix length IPv4 addresses are rolled up to
	// before they are announced. It may not be shorter than the pool's own
	// prefix.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +kubebuilder:default:=32
	// +optional
	AggregationLength *int32 `json:"aggregationLength,omitempty"`

	// AggregationLengthV6 is the same for IPv6 addresses.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +kubebuilder:default:=128
	// +optional
	AggregationLengthV6 *int32 `json:"aggregationLengthV6,omitempty"`

	// LocalPref is the BGP LOCAL_PREF attribute; iBGP sessions only.
	// +optional
	LocalPref uint32 `json:"localPref,omitempty"`

	// Communities attached to the announcements: "65000:100",
	// "large:65000:1:2", or the name of an alias from a Community object.
	// +optional
	Communities []string `json:"communities,omitempty"`

	// IPAddressPools names the pools to announce. With neither this nor
	// IPAddressPoolSelectors set, every pool is announced.
	// +optional
	IPAddressPools []string `json:"ipAddressPools,omitempty"`

	// IPAddressPoolSelectors select, by label, the pools to announce.
	// +optional
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`

	// NodeSelectors limit the nodes that announce. Empty means all.
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`

	// Peers names the BGPPeers to announce to. Empty means all.
	// +optional
	Peers []string `json:"peers,omitempty"`

	// ServiceSelectors limit the Services announced. Empty means all.
	// +optional
	ServiceSelectors []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// BGPAdvertisementStatus is empty; it exists for MetalLB compatibility.
type BGPAdvertisementStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="IPAddressPools",type=string,JSONPath=`.spec.ipAddressPools`
// +kubebuilder:printcolumn:name="Peers",type=string,JSONPath=`.spec.peers`

// BGPAdvertisement announces pool addresses over BGP.
type BGPAdvertisement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BGPAdvertisementSpec   `json:"spec,omitempty"`
	Status BGPAdvertisementStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BGPAdvertisementList is a list of BGPAdvertisements.
type BGPAdvertisementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BGPAdvertisement `json:"items"`
}

func init() {
	register(&BGPAdvertisement{}, &BGPAdvertisementList{})
}
