package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels on ConfigurationState objects.
const (
	LabelComponentType = "metallb.io/component-type"
	LabelNodeName      = "metallb.io/node-name"
)

// ConfigurationResult is the verdict of a component on the configuration it
// last read.
// +kubebuilder:validation:Enum=Valid;Invalid;Unknown
type ConfigurationResult string

// The possible verdicts.
const (
	ConfigurationValid   ConfigurationResult = "Valid"
	ConfigurationInvalid ConfigurationResult = "Invalid"
	ConfigurationUnknown ConfigurationResult = "Unknown"
)

// ConfigurationStateStatus is a component's verdict on the configuration.
type ConfigurationStateStatus struct {
	// Result is Valid, Invalid or Unknown (not reported yet).
	// +optional
	Result ConfigurationResult `json:"result,omitempty"`

	// ErrorSummary names the objects and fields that made the configuration
	// invalid. Empty when Result is Valid.
	// +optional
	ErrorSummary string `json:"errorSummary,omitempty"`

	// Conditions from the component's reconcilers.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.result`
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.status.errorSummary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ConfigurationState reports whether a component accepted the configuration.
// The controller writes one named "controller"; each speaker writes one named
// "speaker-<node>".
type ConfigurationState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status ConfigurationStateStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ConfigurationStateList is a list of ConfigurationStates.
type ConfigurationStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigurationState `json:"items"`
}

func init() {
	register(&ConfigurationState{}, &ConfigurationStateList{})
}
