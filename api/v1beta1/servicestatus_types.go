package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels that speakers put on ServiceL2Status and ServiceBGPStatus objects so
// they can be listed by node or by Service.
const (
	LabelNode             = "metallb.io/node"
	LabelServiceName      = "metallb.io/service-name"
	LabelServiceNamespace = "metallb.io/service-namespace"
)

// MetalLBServiceL2Status is the node and interfaces that answer ARP/NDP for a
// Service.
type MetalLBServiceL2Status struct {
	// Node that announces the Service.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="node is immutable"
	// +optional
	Node string `json:"node,omitempty"`

	// ServiceName is the name of the announced Service.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceName is immutable"
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// ServiceNamespace is the namespace of the announced Service.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceNamespace is immutable"
	// +optional
	ServiceNamespace string `json:"serviceNamespace,omitempty"`

	// Interfaces that answer for the Service's addresses.
	// +optional
	Interfaces []InterfaceInfo `json:"interfaces,omitempty"`
}

// InterfaceInfo names a network interface.
type InterfaceInfo struct {
	// +optional
	Name string `json:"name,omitempty"`
}

// ServiceL2StatusSpec is empty: the object is status only.
type ServiceL2StatusSpec struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Allocated Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Service Name",type=string,JSONPath=`.status.serviceName`
// +kubebuilder:printcolumn:name="Service Namespace",type=string,JSONPath=`.status.serviceNamespace`

// ServiceL2Status reports which node announces a Service on layer 2. Speakers
// name it "l2-" followed by a generated suffix.
type ServiceL2Status struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceL2StatusSpec    `json:"spec,omitempty"`
	Status MetalLBServiceL2Status `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceL2StatusList is a list of ServiceL2Statuses.
type ServiceL2StatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceL2Status `json:"items"`
}

// MetalLBServiceBGPStatus is the node and peers that announce a Service over
// BGP.
type MetalLBServiceBGPStatus struct {
	// Node that announces the Service.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="node is immutable"
	// +optional
	Node string `json:"node,omitempty"`

	// ServiceName is the name of the announced Service.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceName is immutable"
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// ServiceNamespace is the namespace of the announced Service.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceNamespace is immutable"
	// +optional
	ServiceNamespace string `json:"serviceNamespace,omitempty"`

	// Peers the Service is announced to.
	// +optional
	Peers []string `json:"peers,omitempty"`
}

// ServiceBGPStatusSpec is empty: the object is status only.
type ServiceBGPStatusSpec struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Service Name",type=string,JSONPath=`.status.serviceName`
// +kubebuilder:printcolumn:name="Service Namespace",type=string,JSONPath=`.status.serviceNamespace`

// ServiceBGPStatus reports which peers a node announces a Service to. Speakers
// name it "bgp-" followed by a generated suffix.
type ServiceBGPStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceBGPStatusSpec    `json:"spec,omitempty"`
	Status MetalLBServiceBGPStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceBGPStatusList is a list of ServiceBGPStatuses.
type ServiceBGPStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceBGPStatus `json:"items"`
}

func init() {
	register(&ServiceL2Status{}, &ServiceL2StatusList{},
		&ServiceBGPStatus{}, &ServiceBGPStatusList{})
}
