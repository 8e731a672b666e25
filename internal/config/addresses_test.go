package config

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go4.org/netipx"
)

func TestParseRange(t *testing.T) {
	r := netipx.MustParseIPRange
	p := netip.MustParsePrefix
	cases := []struct {
		in   string
		want AddressRange
	}{
		{"192.0.2.0/24", AddressRange{Range: r("192.0.2.0-192.0.2.255"), Prefix: p("192.0.2.0/24")}},
		{"192.0.2.7/24", AddressRange{Range: r("192.0.2.0-192.0.2.255"), Prefix: p("192.0.2.0/24")}},
		{"192.0.2.7/32", AddressRange{Range: r("192.0.2.7-192.0.2.7"), Prefix: p("192.0.2.7/32")}},
		{"192.0.2.7/0032", AddressRange{Range: r("192.0.2.7-192.0.2.7"), Prefix: p("192.0.2.7/32")}},
		{"0.0.0.0/0", AddressRange{Range: r("0.0.0.0-255.255.255.255"), Prefix: p("0.0.0.0/0")}},
		{"2001:db8::/64", AddressRange{Range: r("2001:db8::-2001:db8::ffff:ffff:ffff:ffff"), Prefix: p("2001:db8::/64")}},
		{"192.0.2.10-192.0.2.20", AddressRange{Range: r("192.0.2.10-192.0.2.20")}},
		{"192.0.2.10 - 192.0.2.20", AddressRange{Range: r("192.0.2.10-192.0.2.20")}},
		{" 192.0.2.10-192.0.2.10 ", AddressRange{Range: r("192.0.2.10-192.0.2.10")}},
		{"192.0.2.0-192.0.2.255", AddressRange{Range: r("192.0.2.0-192.0.2.255")}},
		{"2001:db8::1-2001:db8::ff", AddressRange{Range: r("2001:db8::1-2001:db8::ff")}},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRange(tc.in)
			if err != nil {
				t.Fatalf("ParseRange: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netipx.IPRange) bool { return a == b }),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRangeErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", `invalid CIDR "": want a CIDR like "192.0.2.0/24" or a range like "192.0.2.10-192.0.2.20"`},
		{"192.0.2.1", `invalid CIDR "192.0.2.1": no prefix length (write "192.0.2.1/32" for a single address)`},
		{"2001:db8::1", `invalid CIDR "2001:db8::1": no prefix length (write "2001:db8::1/128" for a single address)`},
		{"192.0.2.0/33", `invalid CIDR "192.0.2.0/33": prefix length 33 is longer than 32`},
		{"2001:db8::/129", `invalid CIDR "2001:db8::/129": prefix length 129 is longer than 128`},
		{"192.0.2.0/99999999999999999999", `invalid CIDR "192.0.2.0/99999999999999999999": prefix length 99999999999999999999 is longer than 32`},
		{"192.0.2.0/", `invalid CIDR "192.0.2.0/": prefix length "" is not a number`},
		{"192.0.2.0/+8", `invalid CIDR "192.0.2.0/+8": prefix length "+8" is not a number`},
		{"192.0.2.0/24 ", `invalid CIDR "192.0.2.0/24 ": prefix length "24 " is not a number`},
		{"192.0.2.300/24", `invalid CIDR "192.0.2.300/24": "192.0.2.300" is not an IP address`},
		{"fe80::%eth0/64", `invalid CIDR "fe80::%eth0/64": "fe80::%eth0" has an IPv6 zone, which is not supported`},
		{"::ffff:192.0.2.0/120", `invalid CIDR "::ffff:192.0.2.0/120": "::ffff:192.0.2.0" is an IPv4-mapped IPv6 address: write 192.0.2.0`},
		{"192.0.2.20-192.0.2.10", `invalid range "192.0.2.20-192.0.2.10": start is after end`},
		{"192.0.2.1-2001:db8::1", `invalid range "192.0.2.1-2001:db8::1": start and end are of different IP families`},
		{"192.0.2.1-", `invalid range "192.0.2.1-": end "" is not an IP address`},
		{"x-192.0.2.1", `invalid range "x-192.0.2.1": start "x" is not an IP address`},
		{"192.0.2.0/24-192.0.2.255", `invalid range "192.0.2.0/24-192.0.2.255": start "192.0.2.0/24" is not an IP address`},
		{"fe80::1%eth0-fe80::2", `invalid range "fe80::1%eth0-fe80::2": start "fe80::1%eth0" has an IPv6 zone, which is not supported`},
		{"::ffff:192.0.2.1-::ffff:192.0.2.9", `invalid range "::ffff:192.0.2.1-::ffff:192.0.2.9": start "::ffff:192.0.2.1" is an IPv4-mapped IPv6 address: write 192.0.2.1`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseRange(tc.in)
			if err == nil {
				t.Fatalf("ParseRange(%q) succeeded, want error %q", tc.in, tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestShortestPrefixBits(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"192.0.2.0/24", 24},
		{"192.0.2.0-192.0.2.255", 24},
		{"192.0.2.10-192.0.2.100", 27}, // 192.0.2.32/27 and .64/27 are the largest blocks
		{"192.0.2.10-192.0.2.10", 32},
		{"2001:db8::-2001:db8::ffff", 112},
	}
	for _, tc := range cases {
		r, err := ParseRange(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.shortestPrefixBits(); got != tc.want {
			t.Errorf("shortestPrefixBits(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzParseRange checks that ParseRange never panics, that what it accepts
// is a valid, unmapped, zone-free range whose prefix (if any) is masked and
// spans the range, and that the canonical form parses back to the same
// value.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{
		"192.0.2.0/24", "192.0.2.7/24", "0.0.0.0/0", "2001:db8::/64", "::/0",
		"192.0.2.10-192.0.2.20", "192.0.2.10 - 192.0.2.20", "2001:db8::1-2001:db8::ff",
		"192.0.2.20-192.0.2.10", "192.0.2.1-2001:db8::1", "::ffff:192.0.2.1/128",
		"fe80::1%eth0/64", "192.0.2.1", "-", "/", "1.2.3.4/", "1.2.3.4/099",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			return
		}
		from, to := r.Range.From(), r.Range.To()
		if !r.Range.IsValid() || to.Less(from) || from.Is4() != to.Is4() {
			t.Fatalf("ParseRange(%q) = %v: not a valid range", s, r.Range)
		}
		if from.Zone() != "" || from.Is4In6() || to.Is4In6() {
			t.Fatalf("ParseRange(%q) = %v: zoned or IPv4-mapped", s, r.Range)
		}
		if r.Prefix.IsValid() && (r.Prefix != r.Prefix.Masked() || netipx.RangeOfPrefix(r.Prefix) != r.Range) {
			t.Fatalf("ParseRange(%q): prefix %v does not match range %v", s, r.Prefix, r.Range)
		}
		again, err := ParseRange(r.String())
		if err != nil {
			t.Fatalf("ParseRange(%q) = %v, whose String %q does not parse: %v", s, r, r.String(), err)
		}
		if again != r {
			t.Fatalf("round trip of %q: %v became %v", s, r, again)
		}
	})
}
