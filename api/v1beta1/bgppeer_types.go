package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BGPPeerSpec is the deprecated v1beta1 form of a BGP session. It is a
// structural subset of v1beta2's, so the API server serves both versions from
// one stored object without a conversion webhook.
//
// +kubebuilder:validation:XValidation:rule="!has(self.holdTime) || duration(self.holdTime) == duration('0s') || duration(self.holdTime) >= duration('3s')",message="holdTime must be 0 or at least 3s",fieldPath=".holdTime"
// +kubebuilder:validation:XValidation:rule="!has(self.keepaliveTime) || !has(self.holdTime) || duration(self.keepaliveTime) < duration(self.holdTime) || (duration(self.keepaliveTime) == duration('0s') && duration(self.holdTime) == duration('0s'))",message="keepaliveTime must be shorter than holdTime",fieldPath=".keepaliveTime"
// +kubebuilder:validation:XValidation:rule="!(has(self.ebgpMultiHop) && self.ebgpMultiHop && self.myASN == self.peerASN)",message="ebgpMultiHop cannot be set for an iBGP session (peerASN equals myASN)",fieldPath=".ebgpMultiHop"
type BGPPeerSpec struct {
	// MyASN is the AS number of the local end of the session.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +kubebuilder:validation:Format=int64
	MyASN uint32 `json:"myASN"`

	// ASN is the AS number expected from the peer.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +kubebuilder:validation:Format=int64
	ASN uint32 `json:"peerASN"`

	// Address to dial.
	Address string `json:"peerAddress"`

	// SrcAddress is the source address of the session.
	// +optional
	SrcAddress string `json:"sourceAddress,omitempty"`

	// Port to dial.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16384
	// +optional
	Port uint16 `json:"peerPort,omitempty"`

	// HoldTime is the requested BGP hold time (RFC 4271).
	// +optional
	HoldTime *metav1.Duration `json:"holdTime,omitempty"`

	// KeepaliveTime is the requested BGP keepalive time (RFC 4271).
	// +optional
	KeepaliveTime *metav1.Duration `json:"keepaliveTime,omitempty"`

	// RouterID advertised to the peer.
	// +optional
	RouterID string `json:"routerID,omitempty"`

	// NodeSelectors limit the nodes that open this session.
	// +optional
	NodeSelectors []NodeSelector `json:"nodeSelectors,omitempty"`

	// Password for TCP MD5 authentication.
	// +optional
	Password string `json:"password,omitempty"`

	// BFDProfile names the BFDProfile that guards the session.
	// +optional
	BFDProfile string `json:"bfdProfile,omitempty"`

	// EBGPMultiHop allows an eBGP peer more than one hop away.
	// +optional
	EBGPMultiHop bool `json:"ebgpMultiHop,omitempty"`
}

// NodeSelector is v1beta1's label selector; it has the same JSON shape as
// metav1.LabelSelector.
type NodeSelector struct {
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// +optional
	MatchExpressions []MatchExpression `json:"matchExpressions,omitempty"`
}

// MatchExpression is one requirement of a NodeSelector.
type MatchExpression struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	// +kubebuilder:validation:MinItems:=1
	Values []string `json:"values"`
}

// BGPPeerStatus is empty; it exists for MetalLB compatibility.
type BGPPeerStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="metallb.io/v1beta1 BGPPeer is deprecated; use metallb.io/v1beta2"
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.peerAddress`
// +kubebuilder:printcolumn:name="ASN",type=string,JSONPath=`.spec.peerASN`

// BGPPeer is a BGP session the speakers open (deprecated version).
type BGPPeer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BGPPeerSpec   `json:"spec,omitempty"`
	Status BGPPeerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BGPPeerList is a list of BGPPeers.
type BGPPeerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BGPPeer `json:"items"`
}

func init() {
	register(&BGPPeer{}, &BGPPeerList{})
}
