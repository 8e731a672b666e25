package bfd

import (
	"errors"
	"fmt"
	"time"
)

// MetalLB's BFDProfile defaults, used for the fields a Profile leaves zero.
const (
	DefaultReceiveInterval  = 300 * time.Millisecond
	DefaultTransmitInterval = 300 * time.Millisecond
	DefaultDetectMultiplier = 3
	DefaultMinimumTTL       = 254
)

// The interval range BFDProfile allows (10 ms to 60 s).
const (
	MinInterval = 10 * time.Millisecond
	MaxInterval = 60 * time.Second
)

// ErrProfile is wrapped by every Profile validation error.
var ErrProfile = errors.New("invalid BFD profile")

// Profile is the timing and role of a session, mirroring the BFDProfile
// resource. Zero fields take MetalLB's defaults.
type Profile struct {
	// ReceiveInterval is the shortest interval at which this system wants
	// to receive control packets (Required Min RX Interval).
	ReceiveInterval time.Duration
	// TransmitInterval is the shortest interval at which this system
	// wants to send them once Up (Desired Min TX Interval). Until the
	// session is Up it sends at most once a second, as RFC 5880 6.8.3
	// requires.
	TransmitInterval time.Duration
	// DetectMultiplier is how many of its intervals the peer may stay
	// silent before it declares the session down. BFDProfile allows 2 to
	// 255; this package also runs 1, jittering as 6.8.7 asks.
	DetectMultiplier uint8
	// EchoMode and EchoInterval are accepted and ignored: the echo
	// function is not implemented. Sessions advertise a Required Min Echo
	// RX Interval of zero, so peers send no echo packets either.
	EchoMode     bool
	EchoInterval time.Duration
	// PassiveMode: send nothing until the peer's first packet arrives.
	PassiveMode bool
	// MinimumTTL is the lowest TTL (hop limit) a multi-hop session
	// accepts on a received packet: 254, MetalLB's default, lets the
	// packets cross one router. Single-hop sessions always require
	// exactly 255 (RFC 5881 section 5) and ignore it.
	MinimumTTL uint8
}

// withDefaults validates p and fills its zero fields.
func (p Profile) withDefaults() (Profile, error) {
	if p.ReceiveInterval == 0 {
		p.ReceiveInterval = DefaultReceiveInterval
	}
	if p.TransmitInterval == 0 {
		p.TransmitInterval = DefaultTransmitInterval
	}
	if p.DetectMultiplier == 0 {
		p.DetectMultiplier = DefaultDetectMultiplier
	}
	if p.MinimumTTL == 0 {
		p.MinimumTTL = DefaultMinimumTTL
	}
	for _, iv := range []struct {
		name string
		d    time.Duration
	}{{"receive", p.ReceiveInterval}, {"transmit", p.TransmitInterval}} {
		if iv.d < MinInterval || iv.d > MaxInterval {
			return p, fmt.Errorf("%w: %s interval %v is outside %v-%v", ErrProfile, iv.name, iv.d, MinInterval, MaxInterval)
		}
	}
	return p, nil
}
