package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BGPPeerSpec is a BGP session that speakers on matching nodes open.
//
// +kubebuilder:validation:XValidation:rule="(has(self.peerASN) && self.peerASN != 0) != has(self.dynamicASN)",message="exactly one of peerASN and dynamicASN must be set"
// +kubebuilder:validation:XValidation:rule="(has(self.peerAddress) && size(self.peerAddress) > 0) != (has(self.interface) && size(self.interface) > 0)",message="exactly one of peerAddress and interface must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.holdTime) || duration(self.holdTime) == duration('0s') || duration(self.holdTime) >= duration('3s')",message="holdTime must be 0 or at least 3s",fieldPath=".holdTime"
// +kubebuilder:validation:XValidation:rule="!has(self.keepaliveTime) || !has(self.holdTime) || duration(self.keepaliveTime) < duration(self.holdTime) || (duration(self.keepaliveTime) == duration('0s') && duration(self.holdTime) == duration('0s'))",message="keepaliveTime must be shorter than holdTime",fieldPath=".keepaliveTime"
// +kubebuilder:validation:XValidation:rule="!(has(self.ebgpMultiHop) && self.ebgpMultiHop && ((has(self.peerASN) && self.peerASN == self.myASN) || (has(self.dynamicASN) && self.dynamicASN == 'internal')))",message="ebgpMultiHop cannot be set for an iBGP session",fieldPath=".ebgpMultiHop"
// +kubebuilder:validation:XValidation:rule="(has(self.enableGracefulRestart) && self.enableGracefulRestart) == (has(oldSelf.enableGracefulRestart) && oldSelf.enableGracefulRestart)",message="enableGracefulRestart cannot be changed after creation",fieldPath=".enableGracefulRestart"
// +kubebuilder:validation:XValidation:rule="!(has(self.password) && size(self.password) > 0 && has(self.passwordSecret) && has(self.passwordSecret.name))",message="password and passwordSecret are mutually exclusive"
type BGPPeerSpec struct {
	// MyASN is the AS number of the local end of the session.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +kubebuilder:validation:Format=int64
	MyASN uint32 `json:"myASN"`

	// ASN is the AS number expected from the peer. Exactly one of peerASN
	// and dynamicASN must be set.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +kubebuilder:validation:Format=int64
	// +optional
	ASN uint32 `json:"peerASN,omitempty"`

	// DynamicASN accepts any peer AS of the given kind: internal (equal to
	// myASN) or external (different from myASN).
	// +kubebuilder:validation:Enum=internal;external
	// +optional
	DynamicASN DynamicASNMode `json:"dynamicASN,omitempty"`

	// LocalASN is the AS number presented to the peer in place of myASN.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +kubebuilder:validation:Format=int64
	// +optional
	LocalASN uint32 `json:"localASN,omitempty"`

	// Address to dial. Exactly one of peerAddress and interface must be set.
	// +optional
	Address string `json:"peerAddress,omitempty"`

	// Interface for an unnumbered session. Exactly one of peerAddress and
	// interface must be set.
	// +optional
	Interface string `json:"interface,omitempty"`

	// SrcAddress is the source address of the session.
	// +optional
	SrcAddress string `json:"sourceAddress,omitempty"`

	// Port to dial.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16384
	// +kubebuilder:default:=179
	// +optional
	Port uint16 `json:"peerPort,omitempty"`

	// HoldTime is the requested BGP hold time (RFC 4271): 0 or at least 3s.
	// +optional
	HoldTime *metav1.Duration `json:"holdTime,omitempty"`

	// KeepaliveTime is the requested BGP keepalive time (RFC 4271), shorter
	// than the hold time.
	// +optional
	KeepaliveTime *metav1.Duration `json:"keepaliveTime,omitempty"`

	// ConnectTime is how long to wait between connection attempts.
	// +kubebuilder:validation:XValidation:rule="duration(self).getSeconds() >= 1 && duration(self).getSeconds() <= 65535",message="connectTime must be between 1s and 65535s"
	// +kubebuilder:validation:XValidation:rule="duration(self).getMilliseconds() % 1000 == 0",message="connectTime must be a whole number of seconds"
	// +optional
	ConnectTime *metav1.Duration `json:"connectTime,omitempty"`

	// RouterID advertised to the peer.
	// +optional
	RouterID string `json:"routerID,omitempty"`

	// NodeSelectors limit the nodes that open this session. Empty means all.
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`

	// Password for TCP MD5 authentication.
	// +optional
	Password string `json:"password,omitempty"`

	// PasswordSecret names a Secret of type kubernetes.io/basic-auth, in the
	// controller's namespace, whose key "password" holds the TCP MD5
	// password.
	// +optional
	PasswordSecret corev1.SecretReference `json:"passwordSecret,omitempty"`

	// BFDProfile names the BFDProfile that guards the session. Empty means
	// no BFD.
	// +optional
	BFDProfile string `json:"bfdProfile,omitempty"`

	// EnableGracefulRestart keeps forwarding through a session restart. It
	// cannot be changed after creation.
	// +optional
	EnableGracefulRestart bool `json:"enableGracefulRestart,omitempty"`

	// EBGPMultiHop allows an eBGP peer more than one hop away.
	// +optional
	EBGPMultiHop bool `json:"ebgpMultiHop,omitempty"`

	// VRFName is the host VRF the session runs in.
	// +optional
	VRFName string `json:"vrf,omitempty"`

	// DisableMP separates IPv4 and IPv6 into their own sessions.
	// Deprecated: use dualStackAddressFamily.
	// +kubebuilder:default:=false
	// +optional
	DisableMP bool `json:"disableMP,omitempty"`

	// DualStackAddressFamily carries both address families over this
	// session.
	// +kubebuilder:default:=false
	// +optional
	DualStackAddressFamily bool `json:"dualStackAddressFamily,omitempty"`
}

// DynamicASNMode is the kind of peer AS accepted when the AS is not fixed.
type DynamicASNMode string

// The dynamic AS modes.
const (
	InternalASNMode DynamicASNMode = "internal"
	ExternalASNMode DynamicASNMode = "external"
)

// BGPPeerStatus is empty; it exists for MetalLB compatibility.
type BGPPeerStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.peerAddress`
// +kubebuilder:printcolumn:name="ASN",type=string,JSONPath=`.spec.peerASN`
// +kubebuilder:printcolumn:name="BFD Profile",type=string,JSONPath=`.spec.bfdProfile`
// +kubebuilder:printcolumn:name="Multi Hops",type=string,JSONPath=`.spec.ebgpMultiHop`

// BGPPeer is a BGP session the speakers open.
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
