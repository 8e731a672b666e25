package ipam

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go4.org/netipx"
)

func TestFreeRanges(t *testing.T) {
	tests := []struct {
		name  string
		pool  Pool
		take  []string
		wants []string
	}{
		{name: "fresh range is one span", pool: Pool{Name: "p", AutoAssign: true, Ranges: []netipx.IPRange{rng("198.51.100.0-198.51.100.7")}},
			wants: []string{"198.51.100.0-198.51.100.7"}},
		{name: "holes split spans", pool: Pool{Name: "p", AutoAssign: true, Ranges: []netipx.IPRange{rng("198.51.100.0-198.51.100.7")}},
			take: []string{"198.51.100.0", "198.51.100.3"}, wants: []string{"198.51.100.1-198.51.100.2", "198.51.100.4-198.51.100.7"}},
		{name: "full range has no span", pool: Pool{Name: "p", AutoAssign: true, Ranges: []netipx.IPRange{rng("198.51.100.1-198.51.100.1")}},
			take: []string{"198.51.100.1"}},
		{name: "avoidBuggyIPs spans the skipped addresses", pool: Pool{Name: "p", AutoAssign: true, AvoidBuggyIPs: true,
			Ranges: []netipx.IPRange{rng("198.51.100.0-198.51.101.255")}},
			take: []string{"198.51.100.1"}, wants: []string{"198.51.100.2-198.51.101.254"}},
		{name: "IPv6 /64 stays one line", pool: Pool{Name: "p", AutoAssign: true, Ranges: []netipx.IPRange{netipx.RangeOfPrefix(netip.MustParsePrefix("2001:db8::/64"))}},
			take: []string{"2001:db8::"}, wants: []string{"2001:db8::1-2001:db8::ffff:ffff:ffff:ffff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New([]Pool{tt.pool})
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range tt.take {
				addr := netip.MustParseAddr(a)
				req := Request{Service: ServiceKey{"ns", string(rune('a' + i))}, Primary: FamilyOf(addr),
					RequestedIPs: []netip.Addr{addr}, EligiblePools: []string{"p"}}
				if _, err := b.Allocate(req); err != nil {
					t.Fatalf("take %s: %v", a, err)
				}
			}
			got, ok := b.FreeRanges("p")
			if !ok {
				t.Fatal("pool p unknown")
			}
			var gotText []string
			for _, r := range got {
				gotText = append(gotText, r.String())
			}
			if diff := cmp.Diff(tt.wants, gotText); diff != "" {
				t.Errorf("free ranges (-want +got):\n%s", diff)
			}
		})
	}
	if _, ok := (&Book{ps: &poolSet{}}).FreeRanges("none"); ok {
		t.Error("an unknown pool has free ranges")
	}
}
