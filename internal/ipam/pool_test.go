package ipam

import (
	"errors"
	"math"
	"net/netip"
	"testing"

	"go4.org/netipx"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name  string
		pools []Pool
		err   string
	}{
		{"empty name", []Pool{mkPool("", slash30)}, "invalid pool: empty name"},
		{"defined twice", []Pool{mkPool("a", slash30), mkPool("a", []string{"10.0.1.0/30"})}, `invalid pool "a": defined twice`},
		{"overlap across pools", []Pool{mkPool("b", slash30), mkPool("a", []string{"10.0.0.3-10.0.0.9"})},
			`invalid pool "a": range 10.0.0.3-10.0.0.9 overlaps range 10.0.0.0-10.0.0.3 of pool "b"`},
		{"overlap in one pool", []Pool{mkPool("a", []string{"10.0.0.0/24", "10.0.0.128/25"})},
			`invalid pool "a": ranges 10.0.0.0-10.0.0.255 and 10.0.0.128-10.0.0.255 overlap`},
		{"zero range", []Pool{{Name: "a", Ranges: []netipx.IPRange{{}}}}, `invalid pool "a": invalid range zero IPRange`},
		{"mixed families", []Pool{{Name: "a", Ranges: []netipx.IPRange{netipx.IPRangeFrom(ip("10.0.0.1"), ip("::1"))}}},
			`invalid pool "a": invalid range invalid IPRange`},
		{"IPv4-mapped", []Pool{mkPool("a", []string{"::ffff:10.0.0.0/120"})},
			`invalid pool "a": range ::ffff:10.0.0.0-::ffff:10.0.0.255 uses IPv4-mapped IPv6 addresses; write plain IPv4`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.pools)
			var pe *PoolError
			if err == nil || err.Error() != tc.err || !errors.Is(err, ErrInvalidPool) || !errors.As(err, &pe) {
				t.Fatalf("New error = %v, want %q", err, tc.err)
			}
		})
	}
	ok := []Pool{
		mkPool("v4", []string{"10.0.0.0/24", "10.0.1.0/24"}),
		mkPool("v6", []string{"::/0"}),
		mkPool("empty", nil),
	}
	if _, err := New(ok); err != nil {
		t.Fatalf("New(adjacent ranges, /0, empty pool) = %v", err)
	}
}

func TestStatsCounts(t *testing.T) {
	b := mustBook(t,
		mkPool("v6", []string{"2001:db8::/64", "2001:db9::/127"}),
		mkPool("all", []string{"8000::/1"}),
		mkPool("bug", []string{"10.0.0.0/16"}, buggy),
	)
	for _, r := range []Request{
		mkReq("x", v6, pinned("v6"), eligible("v6")),
		mkReq("y", pinned("bug"), eligible("bug")),
	} {
		if _, err := b.Allocate(r); err != nil {
			t.Fatal(err)
		}
	}
	two64 := Count{u128{hi: 1}}
	want := []Stats{
		{Pool: "all", IPv6: FamilyStats{Total: Count{u128{hi: 1 << 63}}, Available: Count{u128{hi: 1 << 63}}}},
		{Pool: "bug", IPv4: FamilyStats{Total: CountOf(256 * 254), Assigned: CountOf(1), Available: CountOf(256*254 - 1)}},
		{Pool: "v6", IPv6: FamilyStats{Total: Count{u128{hi: 1, lo: 2}}, Assigned: CountOf(1), Available: Count{u128{hi: 1, lo: 1}}}},
	}
	if d := diff(want, b.AllStats()); d != "" {
		t.Errorf("AllStats (-want +got):\n%s", d)
	}
	if got := two64.String(); got != "18446744073709551616" {
		t.Errorf("2^64 formats as %s", got)
	}
	if _, ok := b.Stats("nope"); ok {
		t.Error("Stats of an unknown pool reported ok")
	}
}

func TestCountConversions(t *testing.T) {
	tests := []struct {
		c       Count
		u64     uint64
		exact   bool
		i64     int64
		str     string
		float64 float64
	}{
		{CountOf(0), 0, true, 0, "0", 0},
		{CountOf(math.MaxUint64), math.MaxUint64, true, math.MaxInt64, "18446744073709551615", 0x1p64},
		{Count{u128{hi: 1}}, math.MaxUint64, false, math.MaxInt64, "18446744073709551616", 0x1p64},
		{Count{u128Max}, math.MaxUint64, false, math.MaxInt64, "340282366920938463463374607431768211455", 0x1p128},
	}
	for _, tc := range tests {
		u, exact := tc.c.Uint64()
		if u != tc.u64 || exact != tc.exact || tc.c.Int64() != tc.i64 || tc.c.String() != tc.str || tc.c.Float64() != tc.float64 {
			t.Errorf("%s: Uint64 %d %v, Int64 %d, Float64 %g", tc.str, u, exact, tc.c.Int64(), tc.c.Float64())
		}
	}
}

func TestWholeIPv6SpaceSaturates(t *testing.T) {
	b := mustBook(t, mkPool("all", []string{"::/0"}))
	got, err := b.Allocate(mkReq("x", v6, eligible("all")))
	if err != nil || diff(asg("all", "::"), got) != "" {
		t.Fatalf("Allocate = %v, %v", got, err)
	}
	st, _ := b.Stats("all")
	wantStats := FamilyStats{Total: Count{u128Max}, Assigned: CountOf(1), Available: Count{u128Max.subOne()}}
	if d := diff(wantStats, st.IPv6); d != "" {
		t.Errorf("IPv6 stats (-want +got):\n%s", d)
	}
	if _, err := b.Allocate(mkReq("y", v6, eligible("all"), want("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))); err != nil {
		t.Fatal(err)
	}
	b.Release(svc("y"))
	b.Release(svc("x"))
	st, _ = b.Stats("all")
	if !st.IPv6.Assigned.IsZero() {
		t.Errorf("assigned after releasing all: %v", st.IPv6.Assigned)
	}
}

func TestLookupEdges(t *testing.T) {
	b := mustBook(t,
		mkPool("a", []string{"10.0.0.5-10.0.0.9", "10.0.1.0/32"}),
		mkPool("b", []string{"0.0.0.0/32", "255.255.255.255/32", "::/128"}),
	)
	for addr, want := range map[string]string{
		"10.0.0.4": "", "10.0.0.5": "a", "10.0.0.9": "a", "10.0.0.10": "", "10.0.1.0": "a",
		"0.0.0.0": "b", "255.255.255.255": "b", "::": "b", "::1": "", "10.0.1.1": "",
	} {
		if got, _ := b.PoolOf(netip.MustParseAddr(addr)); got != want {
			t.Errorf("PoolOf(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestBuggyIndexBounds(t *testing.T) {
	tests := []struct {
		r        string
		total    uint64
		lo, last string
	}{
		{"10.0.0.0/24", 254, "10.0.0.1", "10.0.0.254"},
		{"10.0.0.255-10.0.1.0", 0, "", ""},
		{"10.0.0.0/32", 0, "", ""},
		{"0.0.0.0/0", 1 << 24 * 254, "0.0.0.1", "255.255.255.254"},
		{"255.255.255.255/32", 0, "", ""},
	}
	for _, tc := range tests {
		p := newPool(mkPool("p", []string{tc.r}, buggy))
		rs := p.ranges[0]
		if got, _ := (Count{rs.total}).Uint64(); got != tc.total {
			t.Errorf("%s: total %d, want %d", tc.r, got, tc.total)
		}
		if tc.total == 0 {
			continue
		}
		lo, _ := rs.free.min()
		spans := rs.free.spans()
		last := rs.addr(spans[len(spans)-1].hi)
		if rs.addr(lo).String() != tc.lo || last.String() != tc.last {
			t.Errorf("%s: usable %s..%s, want %s..%s", tc.r, rs.addr(lo), last, tc.lo, tc.last)
		}
	}
}
