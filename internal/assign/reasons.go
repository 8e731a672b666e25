package assign

import (
	"errors"

	"github.com/steadylb/steadylb/internal/ipam"
)

// Event reasons, MetalLB's names, so that alerts on them keep working.
const (
	EventIPAllocated          = "IPAllocated"
	EventAllocationFailed     = "AllocationFailed"
	EventClearAssignment      = "ClearAssignment"
	EventDeprecatedAnnotation = "deprecatedAnnotation"
	EventNotEnoughClusterIPs  = "not enough clusterips"
	// EventReservationNotUsable: a reservation names the Service but its
	// request does not allow the reserved addresses.
	EventReservationNotUsable = "ReservationNotUsable"
	ConditionAddressAssigned  = "steadylb.io/AddressAssigned"
	ReasonAssigned            = "Assigned"
	ReasonPoolExhausted       = "PoolExhausted"
	// ReasonPoolExhaustedByReservations: the pools would have room but
	// for the addresses reservations keep.
	ReasonPoolExhaustedByReservations = "PoolExhaustedByReservations"
	ReasonRequestedIPInUse            = "RequestedIPInUse"
	ReasonNoMatchingPool              = "NoMatchingPool"
	ReasonInvalidRequest              = "InvalidRequest"
)

// reasonFor maps an allocation error to the condition reason a user or an
// alert can match on.
func reasonFor(err error) string {
	switch {
	case errors.Is(err, ipam.ErrPoolExhausted):
		return ReasonPoolExhausted
	case errors.Is(err, ipam.ErrRequestedIPInUse):
		return ReasonRequestedIPInUse
	case errors.Is(err, ipam.ErrNoMatchingPool):
		return ReasonNoMatchingPool
	default:
		return ReasonInvalidRequest
	}
}
