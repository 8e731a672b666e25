package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

func FuzzParseARP(f *testing.F) {
	f.Add(arpFrame(f, arp.OperationRequest, ethernet.Broadcast))
	f.Add(arpFrame(f, arp.OperationReply, macA))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		p, eth, err := ParseARP(frame)
		if err != nil {
			return
		}
		again, err := MarshalARP(p, eth.Destination)
		if err != nil {
			t.Fatalf("marshal parsed packet: %v", err)
		}
		q, _, err := ParseARP(again)
		if err != nil {
			t.Fatalf("parse re-marshalled packet: %v", err)
		}
		if d := cmp.Diff(p, q, addrCmp); d != "" {
			t.Errorf("round trip (-first +second):\n%s", d)
		}
	})
}

func FuzzParseNDP(f *testing.F) {
	f.Add(solicitation(f))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := ParseNDP(frame)
		if err != nil {
			return
		}
		again, err := MarshalNDP(m)
		if err != nil {
			// Some option bytes parse but do not marshal back (ndp keeps
			// unknown ones raw); only a panic would be a bug here.
			return
		}
		if _, err := ParseNDP(again); err != nil {
			t.Fatalf("parse re-marshalled message: %v", err)
		}
	})
}
