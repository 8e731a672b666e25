package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"go4.org/netipx"
)

// AddressRange is one entry of an IPAddressPool's spec.addresses.
type AddressRange struct {
	// Range holds every address of the entry.
	Range netipx.IPRange
	// Prefix is the entry as a CIDR, host bits cleared, when it was written
	// as one ("192.0.2.0/24"). It is the zero Prefix (IsValid false) for an
	// entry written as a from-to range, even one that covers a whole CIDR.
	Prefix netip.Prefix
}

// String gives the entry in its canonical written form: the CIDR when it
// was written as one, else "from-to".
func (r AddressRange) String() string {
	if r.Prefix.IsValid() {
		return r.Prefix.String()
	}
	return r.Range.String()
}

// Is4 reports whether the entry holds IPv4 addresses.
func (r AddressRange) Is4() bool { return r.Range.From().Is4() }

// shortestPrefixBits is the length of the largest CIDR block in the entry's
// CIDR decomposition: the entry's own length for a CIDR, and the shortest
// length among the blocks that tile a from-to range. It is what MetalLB
// compares the aggregation length against.
func (r AddressRange) shortestPrefixBits() int {
	if r.Prefix.IsValid() {
		return r.Prefix.Bits()
	}
	shortest := r.Range.From().BitLen()
	for _, p := range r.Range.Prefixes() {
		shortest = min(shortest, p.Bits())
	}
	return shortest
}

// ParseRange parses one entry of spec.addresses. It accepts what MetalLB
// accepts:
//
//   - a CIDR, "192.0.2.0/24" or "2001:db8::/64". Host bits are cleared, so
//     "192.0.2.7/24" means 192.0.2.0/24: MetalLB reads CIDRs with
//     net.ParseCIDR, which does the same. No space is allowed.
//   - an inclusive range, "192.0.2.10-192.0.2.20" or "2001:db8::1-2001:db8::ff";
//     spaces around either address are ignored, as MetalLB trims them.
//     A single address is written "192.0.2.10-192.0.2.10" or "192.0.2.10/32".
//
// It rejects what MetalLB lets through by accident: a range whose ends are of
// different families (MetalLB compares them as 16-byte values and builds a
// range across the IPv4-mapped space), IPv6 zones (net.ParseIP rejects them
// too) and IPv4-mapped IPv6 addresses such as "::ffff:192.0.2.1" (MetalLB
// treats them as IPv4 in some places and IPv6 in others; we ask for the IPv4
// form so that every address in the model is unmapped).
func ParseRange(s string) (AddressRange, error) {
	if from, to, ok := strings.Cut(s, "-"); ok {
		return parseFromTo(s, from, to)
	}
	return parseCIDR(s)
}

func parseFromTo(s, fromText, toText string) (AddressRange, error) {
	from, err := parseAddr(strings.TrimSpace(fromText))
	if err != nil {
		return AddressRange{}, fmt.Errorf("invalid range %q: start %w", s, err)
	}
	to, err := parseAddr(strings.TrimSpace(toText))
	if err != nil {
		return AddressRange{}, fmt.Errorf("invalid range %q: end %w", s, err)
	}
	if from.Is4() != to.Is4() {
		return AddressRange{}, fmt.Errorf("invalid range %q: start and end are of different IP families", s)
	}
	if to.Less(from) {
		return AddressRange{}, fmt.Errorf("invalid range %q: start is after end", s)
	}
	return AddressRange{Range: netipx.IPRangeFrom(from, to)}, nil
}

func parseCIDR(s string) (AddressRange, error) {
	addrText, bitsText, ok := strings.Cut(s, "/")
	if !ok {
		if a, err := parseAddr(s); err == nil {
			return AddressRange{}, fmt.Errorf("invalid CIDR %q: no prefix length (write \"%s/%d\" for a single address)", s, a, a.BitLen())
		}
		return AddressRange{}, fmt.Errorf("invalid CIDR %q: want a CIDR like \"192.0.2.0/24\" or a range like \"192.0.2.10-192.0.2.20\"", s)
	}
	addr, err := parseAddr(addrText)
	if err != nil {
		return AddressRange{}, fmt.Errorf("invalid CIDR %q: %w", s, err)
	}
	bits, err := parseBits(bitsText, addr.BitLen())
	if err != nil {
		return AddressRange{}, fmt.Errorf("invalid CIDR %q: %w", s, err)
	}
	p := netip.PrefixFrom(addr, bits).Masked()
	return AddressRange{Range: netipx.RangeOfPrefix(p), Prefix: p}, nil
}

// parseBits reads a decimal prefix length no longer than maxBits. Leading
// zeros are allowed, as net.ParseCIDR allows them.
func parseBits(s string, maxBits int) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("prefix length %q is not a number", s)
	}
	digits := strings.TrimLeft(s, "0")
	bits, _ := strconv.Atoi("0" + digits) // digits only: cannot fail unless too long
	if len(digits) > 3 || bits > maxBits {
		return 0, fmt.Errorf("prefix length %s is longer than %d", s, maxBits)
	}
	return bits, nil
}

// parseAddr parses one IP address as the model keeps them: no IPv6 zone, and
// IPv4 never in its IPv4-mapped IPv6 form. Its errors read after the
// address's role ("start ...", "sourceAddress ...").
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	case a.Zone() != "":
		return netip.Addr{}, fmt.Errorf("%q has an IPv6 zone, which is not supported", s)
	case a.Is4In6():
		return netip.Addr{}, fmt.Errorf("%q is an IPv4-mapped IPv6 address: write %s", s, a.Unmap())
	}
	return a, nil
}
