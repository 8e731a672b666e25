package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelRetained marks the AddressReservations the controller creates itself
// to retain the addresses of a deleted Service; it deletes them when the
// window ends or the Service is back.
const LabelRetained = "steadylb.io/retained"

// Condition types and reasons of an AddressReservation.
const (
	// ConditionBound is True while the named Service holds every reserved
	// address.
	ConditionBound = "Bound"

	ReasonBound = "Bound"
	// ReasonWaitingForService: the addresses are held for a Service that
	// does not exist yet, or is not ours (type, class), or has not been
	// served yet.
	ReasonWaitingForService = "WaitingForService"
	// ReasonAddressInUse: another Service holds an address; the
	// reservation takes effect when it lets go, and never moves it.
	ReasonAddressInUse = "AddressInUse"
	// ReasonAddressReserved: an older reservation holds an address.
	ReasonAddressReserved = "AddressReserved"
	// ReasonNotInPool: an address lies in no pool.
	ReasonNotInPool = "NotInPool"
	// ReasonNotUsable: the Service exists but may not take the addresses
	// (its pools do not admit it, it asks for other addresses or another
	// family).
	ReasonNotUsable = "NotUsable"
)

// AddressReservationSpec pins addresses to a Service name.
// +kubebuilder:validation:XValidation:rule="self.addresses.size() < 2 || ip(self.addresses[0]).family() != ip(self.addresses[1]).family()",message="at most one address per family"
type AddressReservationSpec struct {
	// ServiceName is the Service, in the reservation's namespace, the
	// addresses are kept for. It need not exist yet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	ServiceName string `json:"serviceName"`

	// Addresses are one address, or one per family, from any pool. No
	// other Service is given them while the reservation exists.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=45
	// +kubebuilder:validation:items:XValidation:rule="isIP(self) && ip.isCanonical(self)",message="must be an IP address in canonical form"
	// +listType=set
	Addresses []string `json:"addresses"`

	// ExpiresAt ends the reservation: the controller deletes it then. The
	// controller sets it on the reservations it creates to retain a deleted
	// Service's addresses; unset, the reservation lasts until deleted.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// AddressReservationStatus says whether the reservation is bound.
type AddressReservationStatus struct {
	// BoundTo is the Service that holds the addresses, when it does.
	// +optional
	BoundTo string `json:"boundTo,omitempty"`

	// Conditions: Bound, with a reason saying why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ar
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.spec.addresses`
// +kubebuilder:printcolumn:name="Bound",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].reason`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.spec.expiresAt`

// AddressReservation keeps addresses for a Service that may not exist yet:
// no other Service is given them, and the named Service gets them when it
// is created (or when the Service now holding them lets go).
type AddressReservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddressReservationSpec   `json:"spec"`
	Status AddressReservationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AddressReservationList is a list of AddressReservations.
type AddressReservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddressReservation `json:"items"`
}
