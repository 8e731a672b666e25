package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CommunitySpec defines named BGP communities.
type CommunitySpec struct {
	// +optional
	Communities []CommunityAlias `json:"communities,omitempty"`
}

// CommunityAlias gives a BGP community value a name that BGPAdvertisements
// can use instead of the value.
type CommunityAlias struct {
	// Name is the alias.
	// +optional
	Name string `json:"name,omitempty"`

	// Value is a standard ("65000:100") or large ("large:65000:1:2")
	// community.
	// +optional
	Value string `json:"value,omitempty"`
}

// CommunityStatus is empty; it exists for MetalLB compatibility.
type CommunityStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Community is a set of named BGP communities.
type Community struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CommunitySpec   `json:"spec,omitempty"`
	Status CommunityStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CommunityList is a list of Communities.
type CommunityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Community `json:"items"`
}

func init() {
	register(&Community{}, &CommunityList{})
}
