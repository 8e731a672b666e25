package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BFDProfileSpec holds the timers and modes of the BFD sessions that guard
// the BGP sessions referring to the profile. Intervals are in milliseconds.
type BFDProfileSpec struct {
	// ReceiveInterval is the lowest interval at which this system can
	// receive control packets. Default 300.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +optional
	ReceiveInterval *uint32 `json:"receiveInterval,omitempty"`

	// TransmitInterval is the lowest interval at which this system wants to
	// send control packets, before jitter. Default 300.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +optional
	TransmitInterval *uint32 `json:"transmitInterval,omitempty"`

	// DetectMultiplier is how many missed packets declare the session down.
	// Default 3.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=255
	// +optional
	DetectMultiplier *uint32 `json:"detectMultiplier,omitempty"`

	// EchoInterval is the lowest echo receive interval this system handles.
	// Default 50.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +optional
	EchoInterval *uint32 `json:"echoInterval,omitempty"`

	// EchoMode turns on echo packets. Not for multi-hop or IPv6 sessions.
	// +optional
	EchoMode *bool `json:"echoMode,omitempty"`

	// PassiveMode waits for the peer's control packets before sending any.
	// +optional
	PassiveMode *bool `json:"passiveMode,omitempty"`

	// MinimumTTL is the lowest TTL accepted on incoming control packets;
	// multi-hop sessions only.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=254
	// +optional
	MinimumTTL *uint32 `json:"minimumTtl,omitempty"`
}

// BFDProfileStatus is empty; it exists for MetalLB compatibility.
type BFDProfileStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Passive Mode",type=boolean,JSONPath=`.spec.passiveMode`
// +kubebuilder:printcolumn:name="Transmit Interval",type=integer,JSONPath=`.spec.transmitInterval`
// +kubebuilder:printcolumn:name="Receive Interval",type=integer,JSONPath=`.spec.receiveInterval`
// +kubebuilder:printcolumn:name="Multiplier",type=integer,JSONPath=`.spec.detectMultiplier`

// BFDProfile is a named set of BFD settings a BGPPeer can refer to.
type BFDProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BFDProfileSpec   `json:"spec,omitempty"`
	Status BFDProfileStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BFDProfileList is a list of BFDProfiles.
type BFDProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BFDProfile `json:"items"`
}

func init() {
	register(&BFDProfile{}, &BFDProfileList{})
}
