package bfd

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// upPoll is a packet of an Up session starting a Poll Sequence, and its
// encoding worked out by hand from the RFC 5880 figure.
var (
	upPoll = ControlPacket{
		State:                 Up,
		Poll:                  true,
		DetectMult:            3,
		MyDiscriminator:       0x01020304,
		YourDiscriminator:     0x0a0b0c0d,
		DesiredMinTxInterval:  300 * time.Millisecond,
		RequiredMinRxInterval: 300 * time.Millisecond,
	}
	upPollWire = []byte{
		0x20, 0xe0, 0x03, 0x18, // version 1 diag 0, Up|P, mult 3, length 24
		0x01, 0x02, 0x03, 0x04,
		0x0a, 0x0b, 0x0c, 0x0d,
		0x00, 0x04, 0x93, 0xe0, // 300,000 us
		0x00, 0x04, 0x93, 0xe0,
		0x00, 0x00, 0x00, 0x00,
	}
)

func TestAppendWireLayout(t *testing.T) {
	got, err := upPoll.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, upPollWire) {
		t.Errorf("Append:\n got % x\nwant % x", got, upPollWire)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    ControlPacket
	}{
		{"up with poll", upPoll},
		{"first packet of an active session", ControlPacket{State: Down, DetectMult: 3, MyDiscriminator: 7, DesiredMinTxInterval: time.Second, RequiredMinRxInterval: 300 * time.Millisecond}},
		{"final with every other bit", ControlPacket{
			Diag: DiagNeighborSignaledDown, State: Init, Final: true, ControlPlaneIndependent: true, Demand: true,
			DetectMult: 255, MyDiscriminator: 0xffffffff, YourDiscriminator: 1,
			DesiredMinTxInterval: 10 * time.Millisecond, RequiredMinRxInterval: 60 * time.Second, RequiredMinEchoRxInterval: 50 * time.Millisecond,
		}},
		{"admin down", ControlPacket{Diag: DiagAdministrativelyDown, State: AdminDown, DetectMult: 1, MyDiscriminator: 9, YourDiscriminator: 10}},
		{"unassigned diag", ControlPacket{Diag: 31, State: Down, DetectMult: 2, MyDiscriminator: 3}},
		{"largest intervals", ControlPacket{State: Down, DetectMult: 2, MyDiscriminator: 3,
			DesiredMinTxInterval: 4294967295 * time.Microsecond, RequiredMinRxInterval: 4294967295 * time.Microsecond, RequiredMinEchoRxInterval: 4294967295 * time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.p.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != ControlPacketLen {
				t.Fatalf("encoded %d bytes, want %d", len(b), ControlPacketLen)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.p, got); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecodeIgnoresTrailingBytes(t *testing.T) {
	got, err := Decode(append(bytes.Clone(upPollWire), 0xde, 0xad))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(upPoll, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDecodeDiscards covers each discard rule of RFC 5880 section 6.8.6
// that needs no session.
func TestDecodeDiscards(t *testing.T) {
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(upPollWire)) }
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"23 bytes", upPollWire[:23], ErrTruncated},
		{"version 0", edit(func(b []byte) []byte { b[0] &^= 0xe0; return b }), ErrVersion},
		{"version 2", edit(func(b []byte) []byte { b[0] = 0x40; return b }), ErrVersion},
		{"authentication bit", edit(func(b []byte) []byte { b[1] |= flagAuth; b[3] = 26; return append(b, 1, 2) }), ErrAuthentication},
		{"length below 24", edit(func(b []byte) []byte { b[3] = 23; return b }), ErrLength},
		{"length beyond the payload", edit(func(b []byte) []byte { b[3] = 25; return b }), ErrLength},
		{"length 26 without authentication", edit(func(b []byte) []byte { b[3] = 26; return append(b, 0, 0) }), ErrLength},
		{"detect mult zero", edit(func(b []byte) []byte { b[2] = 0; return b }), ErrDetectMult},
		{"multipoint", edit(func(b []byte) []byte { b[1] |= flagMultipoint; return b }), ErrMultipoint},
		{"my discriminator zero", edit(func(b []byte) []byte { copy(b[4:8], []byte{0, 0, 0, 0}); return b }), ErrMyDiscriminator},
		{"your discriminator zero while up", edit(func(b []byte) []byte { copy(b[8:12], []byte{0, 0, 0, 0}); return b }), ErrYourDiscriminator},
		{"your discriminator zero while init", edit(func(b []byte) []byte {
			copy(b[8:12], []byte{0, 0, 0, 0})
			b[1] = byte(Init) << 6
			return b
		}), ErrYourDiscriminator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b)
			if !errors.Is(err, tc.want) {
				t.Errorf("Decode error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeAcceptsZeroYourDiscriminatorWhenDown(t *testing.T) {
	for _, st := range []State{Down, AdminDown} {
		p := ControlPacket{State: st, DetectMult: 3, MyDiscriminator: 1}
		b, err := p.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(b); err != nil {
			t.Errorf("%s with Your Discriminator 0: %v", st, err)
		}
	}
}

func TestAppendRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    ControlPacket
	}{
		{"authentication", ControlPacket{Authenticated: true}},
		{"negative interval", ControlPacket{DesiredMinTxInterval: -time.Microsecond}},
		{"interval beyond 32 bits of microseconds", ControlPacket{RequiredMinRxInterval: 4294967296 * time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.p.Append([]byte{1})
			if err == nil {
				t.Fatal("Append succeeded")
			}
			if !bytes.Equal(b, []byte{1}) {
				t.Errorf("Append changed the buffer on failure: % x", b)
			}
		})
	}
}
