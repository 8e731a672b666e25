package config

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// BFD defaults, applied where a profile leaves a field unset. The intervals
// and the multiplier are MetalLB's documented defaults; the minimum TTL is
// FRR bfdd's.
const (
	DefaultBFDReceiveInterval  = 300 * time.Millisecond
	DefaultBFDTransmitInterval = 300 * time.Millisecond
	DefaultBFDDetectMultiplier = 3
	DefaultBFDEchoInterval     = 50 * time.Millisecond
	DefaultBFDMinimumTTL       = 254
)

// BFDProfile is a validated BFDProfile with its defaults applied. It is
// immutable.
type BFDProfile struct {
	name             string
	receiveInterval  time.Duration
	transmitInterval time.Duration
	detectMultiplier uint32
	echoInterval     time.Duration
	echoMode         bool
	passiveMode      bool
	minimumTTL       uint32
}

// Name is the profile's metadata.name.
func (b *BFDProfile) Name() string { return b.name }

// ReceiveInterval is the lowest interval at which this system can receive
// control packets (whole milliseconds).
func (b *BFDProfile) ReceiveInterval() time.Duration { return b.receiveInterval }

// TransmitInterval is the lowest interval at which this system wants to send
// control packets (whole milliseconds).
func (b *BFDProfile) TransmitInterval() time.Duration { return b.transmitInterval }

// DetectMultiplier is how many missed packets declare the session down.
func (b *BFDProfile) DetectMultiplier() uint32 { return b.detectMultiplier }

// EchoInterval is the lowest echo receive interval (whole milliseconds).
func (b *BFDProfile) EchoInterval() time.Duration { return b.echoInterval }

// EchoMode reports whether echo packets are on.
func (b *BFDProfile) EchoMode() bool { return b.echoMode }

// PassiveMode reports whether the system waits for the peer's first packet.
func (b *BFDProfile) PassiveMode() bool { return b.passiveMode }

// MinimumTTL is the lowest TTL accepted on multi-hop sessions.
func (b *BFDProfile) MinimumTTL() uint32 { return b.minimumTTL }

// buildBFDProfile validates one profile; nil when it has errors. The ranges
// are the CRD's, checked again because config does not trust the schema.
func buildBFDProfile(rep *reporter, in *v1beta1.BFDProfile) *BFDProfile {
	spec := field.NewPath("spec")
	s := in.Spec
	b := &BFDProfile{
		name:             in.Name,
		receiveInterval:  bfdInterval(rep, spec.Child("receiveInterval"), s.ReceiveInterval, DefaultBFDReceiveInterval),
		transmitInterval: bfdInterval(rep, spec.Child("transmitInterval"), s.TransmitInterval, DefaultBFDTransmitInterval),
		detectMultiplier: bfdNumber(rep, spec.Child("detectMultiplier"), s.DetectMultiplier, DefaultBFDDetectMultiplier, 2, 255),
		echoInterval:     bfdInterval(rep, spec.Child("echoInterval"), s.EchoInterval, DefaultBFDEchoInterval),
		echoMode:         s.EchoMode != nil && *s.EchoMode,
		passiveMode:      s.PassiveMode != nil && *s.PassiveMode,
		minimumTTL:       bfdNumber(rep, spec.Child("minimumTtl"), s.MinimumTTL, DefaultBFDMinimumTTL, 1, 254),
	}
	if !rep.ok() {
		return nil
	}
	return b
}

func bfdInterval(rep *reporter, path *field.Path, ms *uint32, def time.Duration) time.Duration {
	n := bfdNumber(rep, path, ms, uint32(def/time.Millisecond), 10, 60000)
	return time.Duration(n) * time.Millisecond
}

func bfdNumber(rep *reporter, path *field.Path, v *uint32, def, lo, hi uint32) uint32 {
	if v == nil {
		return def
	}
	if *v < lo || *v > hi {
		rep.add(path, "%d is out of range %d-%d", *v, lo, hi)
	}
	return *v
}
