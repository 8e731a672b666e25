package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// The four reasons a Service can be left without an address. Every error
// Allocate returns matches exactly one of them with errors.Is, so the
// controller maps errors to condition reasons without parsing text:
//
//	ErrPoolExhausted    -> PoolExhausted
//	ErrRequestedIPInUse -> RequestedIPInUse
//	ErrNoMatchingPool   -> NoMatchingPool
//	ErrInvalidRequest   -> InvalidRequest
var (
	ErrPoolExhausted    = errors.New("no available addresses")
	ErrRequestedIPInUse = errors.New("requested IP is in use")
	ErrNoMatchingPool   = errors.New("no matching pool")
	ErrInvalidRequest   = errors.New("invalid request")
)

// Finer kinds; each also matches its reason above.
var (
	// ErrUnknownPool: the pinned pool does not exist. (NoMatchingPool)
	ErrUnknownPool error = &kind{"unknown pool", ErrNoMatchingPool}
	// ErrNotInPool: an address lies in no pool, or is excluded by
	// avoidBuggyIPs. (NoMatchingPool)
	ErrNotInPool error = &kind{"address is in no pool", ErrNoMatchingPool}
	// ErrNotEligible: the pool's serviceAllocation does not admit the
	// Service. (NoMatchingPool)
	ErrNotEligible error = &kind{"pool does not admit the service", ErrNoMatchingPool}
	// ErrFamilyMismatch: an address of a family the Service does not use.
	// (InvalidRequest)
	ErrFamilyMismatch error = &kind{"IP family mismatch", ErrInvalidRequest}
)

// ErrInvalidPool is returned by New and Reconfigure for a pool set that
// cannot be used; nothing is changed then.
var ErrInvalidPool = errors.New("invalid pool configuration")

var (
	_ error = (*InUseError)(nil)
	_ error = (*PoolError)(nil)
	_ error = (*userError)(nil)
	_ error = (*kind)(nil)
)

// kind is a sentinel that also matches a parent sentinel.
type kind struct {
	msg    string
	parent error
}

func (k *kind) Error() string { return k.msg }
func (k *kind) Unwrap() error { return k.parent }

// userError carries the sentence a user reads in an event, and the kind.
type userError struct {
	kind error
	msg  string
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.kind }

func errorf(k error, format string, args ...any) error {
	return &userError{kind: k, msg: fmt.Sprintf(format, args...)}
}

// InUseError says an address a Service asked for (or claimed in Restore)
// is held by other Services it cannot share with. It matches
// ErrRequestedIPInUse.
type InUseError struct {
	Addr netip.Addr
	// Holders that keep the address, sorted.
	Holders []ServiceKey
	// Why sharing is impossible, e.g. "both use TCP/80".
	Why string
	// claimed: found in status (Restore) rather than requested.
	claimed bool
}

func (e *InUseError) Error() string {
	what := "requested IP"
	if e.claimed {
		what = "IP"
	}
	return fmt.Sprintf("%s %s is in use by %s (cannot share: %s)", what, e.Addr, servicesPhrase(e.Holders), e.Why)
}

func (e *InUseError) Unwrap() error { return ErrRequestedIPInUse }

// PoolError describes an invalid pool set. It matches ErrInvalidPool.
type PoolError struct {
	Pool   string
	Reason string
}

func (e *PoolError) Error() string {
	if e.Pool == "" {
		return "invalid pool: " + e.Reason
	}
	return fmt.Sprintf("invalid pool %q: %s", e.Pool, e.Reason)
}

func (e *PoolError) Unwrap() error { return ErrInvalidPool }

func servicesPhrase(ks []ServiceKey) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.String()
	}
	if len(names) == 1 {
		return "service " + names[0]
	}
	return "services " + strings.Join(names, ", ")
}

func poolsPhrase(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return "pool " + q[0]
	}
	return "pools " + strings.Join(q, ", ")
}
