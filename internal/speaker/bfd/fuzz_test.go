package bfd

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary UDP payloads to the decoder: it must never
// panic, and whatever it accepts must re-encode to the packet's first 24
// bytes exactly.
func FuzzDecode(f *testing.F) {
	f.Add(upPollWire)
	f.Add(append(bytes.Clone(upPollWire), 0xff))
	f.Add([]byte{0x20, 0x44, 0x03, 0x1a, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2})
	f.Add([]byte{0x20, 0x40, 0x03, 0x18})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		out, err := p.Append(nil)
		if err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", p, err)
		}
		if !bytes.Equal(out, b[:ControlPacketLen]) {
			t.Fatalf("re-encoded\n% x\nfrom\n% x", out, b[:ControlPacketLen])
		}
	})
}
