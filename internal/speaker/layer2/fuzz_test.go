package layer2

import (
	"net/netip"
	"syscall"
	"testing"
)

// FuzzHandle feeds arbitrary frames to both responders: none may panic,
// and whatever they send must be an answer, from our MAC, for an address
// in the set.
func FuzzHandle(f *testing.F) {
	v4, v6 := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8::1")
	f.Add(arpRequest(f, v4))
	f.Add(solicit(f, v6))
	f.Add(solicitFrom(f, netip.IPv6Unspecified(), v6, false))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, p := range []Protocol{ARP, NDP} {
			conn := newFakeConn()
			r := idleResponder(eth0, p, conn, v4, v6)
			r.handle(frame)
			for _, s := range decodeAll(t, conn.written()) {
				if s.Kind != "reply" && !(p == NDP && s.ToIP.IsMulticast()) {
					t.Errorf("%s responder sent %+v", p, s)
				}
				if s.Target != v4 && s.Target != v6 || s.MAC != macEth0.String() {
					t.Errorf("%s responder claimed %s for %s", p, s.MAC, s.Target)
				}
			}
		}
	})
}

// FuzzParseLinks feeds arbitrary netlink dumps to the link parser.
func FuzzParseLinks(f *testing.F) {
	if b, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC); err == nil {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, dump []byte) {
		links, err := parseLinks(dump)
		if err != nil && links != nil {
			t.Errorf("parseLinks returned links and error %v", err)
		}
	})
}
