package bfd

import "strconv"

// State is a session state (RFC 5880 section 4.1, the Sta field).
type State uint8

// The four session states, with their wire values.
const (
	AdminDown State = 0
	Down      State = 1
	Init      State = 2
	Up        State = 3
)

func (s State) String() string {
	switch s {
	case AdminDown:
		return "AdminDown"
	case Down:
		return "Down"
	case Init:
		return "Init"
	case Up:
		return "Up"
	default:
		return "State(" + strconv.Itoa(int(s)) + ")"
	}
}

// Diag is a diagnostic code: why the local system last left Up, or what
// the remote system said about itself (RFC 5880 section 4.1). Codes 9-31
// are unassigned; they decode and re-encode unchanged.
type Diag uint8

// The diagnostic codes RFC 5880 assigns. This package produces
// DiagNone, DiagControlDetectionTimeExpired, DiagNeighborSignaledDown and
// DiagAdministrativelyDown; the others can only arrive from a peer.
const (
	DiagNone                        Diag = 0
	DiagControlDetectionTimeExpired Diag = 1
	DiagEchoFunctionFailed          Diag = 2
	DiagNeighborSignaledDown        Diag = 3
	DiagForwardingPlaneReset        Diag = 4
	DiagPathDown                    Diag = 5
	DiagConcatenatedPathDown        Diag = 6
	DiagAdministrativelyDown        Diag = 7
	DiagReverseConcatenatedPathDown Diag = 8
)

var diagNames = [...]string{
	DiagNone:                        "None",
	DiagControlDetectionTimeExpired: "ControlDetectionTimeExpired",
	DiagEchoFunctionFailed:          "EchoFunctionFailed",
	DiagNeighborSignaledDown:        "NeighborSignaledDown",
	DiagForwardingPlaneReset:        "ForwardingPlaneReset",
	DiagPathDown:                    "PathDown",
	DiagConcatenatedPathDown:        "ConcatenatedPathDown",
	DiagAdministrativelyDown:        "AdministrativelyDown",
	DiagReverseConcatenatedPathDown: "ReverseConcatenatedPathDown",
}

func (d Diag) String() string {
	if int(d) < len(diagNames) {
		return diagNames[d]
	}
	return "Diag(" + strconv.Itoa(int(d)) + ")"
}
