package bfd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ControlPacketLen is the length of the mandatory section of a control
// packet, the whole packet when no authentication section follows.
const ControlPacketLen = 24

// version is the only BFD version there is.
const version = 1

// Flag bits in the second byte, after the two state bits.
const (
	flagPoll       = 0x20
	flagFinal      = 0x10
	flagCPI        = 0x08
	flagAuth       = 0x04
	flagDemand     = 0x02
	flagMultipoint = 0x01
)

// Reasons Decode discards a packet. Each is wrapped with the offending
// value; match with errors.Is.
var (
	ErrTruncated = errors.New("shorter than a BFD control packet")
	ErrVersion   = errors.New("not BFD version 1")
	// ErrAuthentication: the A bit is set. This package runs no
	// authentication (bfd.AuthType is always zero), and RFC 5880 6.8.6
	// says such a packet MUST be discarded.
	ErrAuthentication  = errors.New("authentication section present, and authentication is not supported")
	ErrLength          = errors.New("bad length field")
	ErrDetectMult      = errors.New("detect multiplier is zero")
	ErrMultipoint      = errors.New("multipoint bit is set")
	ErrMyDiscriminator = errors.New("my discriminator is zero")
	// ErrYourDiscriminator: Your Discriminator is zero while the sender
	// says it is Init or Up, which it cannot be without having heard us.
	ErrYourDiscriminator = errors.New("your discriminator is zero in state Init or Up")
)

// ControlPacket is the mandatory section of a BFD control packet (RFC
// 5880 section 4.1). Intervals are carried in microseconds on the wire.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Vers |  Diag   |Sta|P|F|C|A|D|M|  Detect Mult  |    Length     |
//	|                       My Discriminator                        |
//	|                      Your Discriminator                       |
//	|                    Desired Min TX Interval                    |
//	|                   Required Min RX Interval                    |
//	|                 Required Min Echo RX Interval                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type ControlPacket struct {
	Diag  Diag
	State State
	// Poll asks the peer to confirm a parameter change with Final.
	Poll  bool
	Final bool
	// ControlPlaneIndependent (C) says BFD runs apart from the control
	// plane. Never set by this package: it runs in the speaker process.
	ControlPlaneIndependent bool
	// Authenticated (A) announces an authentication section. Decode
	// rejects it and Append refuses it: authentication is not supported.
	Authenticated bool
	Demand        bool
	// Multipoint (M) is reserved and must be zero on both ends.
	Multipoint                bool
	DetectMult                uint8
	MyDiscriminator           uint32
	YourDiscriminator         uint32
	DesiredMinTxInterval      time.Duration
	RequiredMinRxInterval     time.Duration
	RequiredMinEchoRxInterval time.Duration
}

// Decode parses a control packet from a UDP payload and applies the
// checks of RFC 5880 section 6.8.6 that need no session: version 1, no
// authentication, Length exactly 24 and within the payload, nonzero
// Detect Mult and My Discriminator, M clear, and a nonzero Your
// Discriminator unless the state is Down or AdminDown. Bytes after Length
// are ignored. Everything Decode accepts, Append re-encodes to the same
// 24 bytes.
func Decode(b []byte) (ControlPacket, error) {
	if len(b) < ControlPacketLen {
		return ControlPacket{}, fmt.Errorf("%w: %d bytes", ErrTruncated, len(b))
	}
	if v := b[0] >> 5; v != version {
		return ControlPacket{}, fmt.Errorf("%w: version %d", ErrVersion, v)
	}
	flags := b[1]
	if flags&flagAuth != 0 {
		return ControlPacket{}, ErrAuthentication
	}
	// Without an authentication section nothing may follow the mandatory
	// one, so 24 is the only correct length; more than the payload holds
	// is a MUST-discard of 6.8.6.
	if n := int(b[3]); n != ControlPacketLen {
		return ControlPacket{}, fmt.Errorf("%w: %d, want %d (payload %d bytes)", ErrLength, n, ControlPacketLen, len(b))
	}
	p := ControlPacket{
		Diag:                      Diag(b[0] & 0x1f),
		State:                     State(flags >> 6),
		Poll:                      flags&flagPoll != 0,
		Final:                     flags&flagFinal != 0,
		ControlPlaneIndependent:   flags&flagCPI != 0,
		Demand:                    flags&flagDemand != 0,
		Multipoint:                flags&flagMultipoint != 0,
		DetectMult:                b[2],
		MyDiscriminator:           binary.BigEndian.Uint32(b[4:]),
		YourDiscriminator:         binary.BigEndian.Uint32(b[8:]),
		DesiredMinTxInterval:      micros(b[12:]),
		RequiredMinRxInterval:     micros(b[16:]),
		RequiredMinEchoRxInterval: micros(b[20:]),
	}
	switch {
	case p.DetectMult == 0:
		return ControlPacket{}, ErrDetectMult
	case p.Multipoint:
		return ControlPacket{}, ErrMultipoint
	case p.MyDiscriminator == 0:
		return ControlPacket{}, ErrMyDiscriminator
	case p.YourDiscriminator == 0 && p.State != Down && p.State != AdminDown:
		return ControlPacket{}, fmt.Errorf("%w: state %s", ErrYourDiscriminator, p.State)
	}
	return p, nil
}

// Append appends the 24-byte encoding of p to b. It fails when p asks for
// an authentication section, or an interval is negative or longer than
// the wire's 2^32-1 microseconds; sub-microsecond parts are dropped.
// Append does not check the receive rules: a test can encode packets
// Decode must reject.
func (p ControlPacket) Append(b []byte) ([]byte, error) {
	if p.Authenticated {
		return b, ErrAuthentication
	}
	var intervals [3]uint32
	for i, d := range []time.Duration{p.DesiredMinTxInterval, p.RequiredMinRxInterval, p.RequiredMinEchoRxInterval} {
		us := d / time.Microsecond
		if us < 0 || us > math.MaxUint32 {
			return b, fmt.Errorf("interval %v does not fit the wire's microseconds", d)
		}
		intervals[i] = uint32(us)
	}
	flags := byte(p.State&3) << 6
	for _, f := range []struct {
		set bool
		bit byte
	}{{p.Poll, flagPoll}, {p.Final, flagFinal}, {p.ControlPlaneIndependent, flagCPI}, {p.Demand, flagDemand}, {p.Multipoint, flagMultipoint}} {
		if f.set {
			flags |= f.bit
		}
	}
	b = append(b, version<<5|byte(p.Diag&0x1f), flags, p.DetectMult, ControlPacketLen)
	b = binary.BigEndian.AppendUint32(b, p.MyDiscriminator)
	b = binary.BigEndian.AppendUint32(b, p.YourDiscriminator)
	for _, us := range intervals {
		b = binary.BigEndian.AppendUint32(b, us)
	}
	return b, nil
}

func micros(b []byte) time.Duration {
	return time.Duration(binary.BigEndian.Uint32(b)) * time.Microsecond
}
