package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// L2AdvertisementSpec says which pools are announced with ARP/NDP, from
// which nodes and on which interfaces.
type L2AdvertisementSpec struct {
	// IPAddressPools names the pools to announce. With neither this nor
	// IPAddressPoolSelectors set, every pool is announced.
	// +optional
	IPAddressPools []string `json:"ipAddressPools,omitempty"`

	// IPAddressPoolSelectors select, by label, the pools to announce.
	// +optional
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`

	// NodeSelectors limit the nodes that may announce. Empty means all.
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`

	// Interfaces limit the interfaces that answer. Empty means every
	// broadcast-capable, up interface that is not enslaved.
	// +optional
	Interfaces []string `json:"interfaces,omitempty"`

	// ServiceSelectors limit the Services announced. Empty means all.
	// +optional
	ServiceSelectors []metav1.LabelSelector `json:"serviceSelectors,omitempty"`

	// PreferredNodeSelectors weigh nodes in the election of the announcing
	// node: the candidate with the highest summed weight wins.
	// +optional
	PreferredNodeSelectors []PreferredNodeSelector `json:"preferredNodeSelectors,omitempty"`
}

// PreferredNodeSelector adds Weight to the score of every node its
// Preference matches.
type PreferredNodeSelector struct {
	// Weight added to a matching node's score.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`

	// Preference selects the nodes that get the weight.
	Preference metav1.LabelSelector `json:"preference"`
}

// L2AdvertisementStatus is empty; it exists for MetalLB compatibility.
type L2AdvertisementStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="IPAddressPools",type=string,JSONPath=`.spec.ipAddressPools`
// +kubebuilder:printcolumn:name="Interfaces",type=string,JSONPath=`.spec.interfaces`

// L2Advertisement announces pool addresses on layer 2 (ARP and NDP).
type L2Advertisement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   L2AdvertisementSpec   `json:"spec,omitempty"`
	Status L2AdvertisementStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// L2AdvertisementList is a list of L2Advertisements.
type L2AdvertisementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []L2Advertisement `json:"items"`
}

func init() {
	register(&L2Advertisement{}, &L2AdvertisementList{})
}
