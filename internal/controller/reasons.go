package controller

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
	ConditionAddressAssigned  = "steadylb.io/AddressAssigned"
	ReasonAssigned            = "Assigned"
	ReasonPoolExhausted       = "PoolExhausted"
	ReasonRequestedIPInUse    = "RequestedIPInUse"
	ReasonNoMatchingPool      = "NoMatchingPool"
	ReasonInvalidRequest      = "InvalidRequest"
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
