package ipam

import (
	"math"
	"math/big"
	"math/bits"
	"net/netip"
)

// u128 is an unsigned 128-bit integer. It is the coordinate of the "usable
// index" space the free-interval sets live in: IPv6 ranges up to /0 need all
// 128 bits, so plain uint64 offsets would not do.
type u128 struct{ hi, lo uint64 }

var u128Max = u128{math.MaxUint64, math.MaxUint64}

func u64(v uint64) u128 { return u128{lo: v} }

func (u u128) cmp(v u128) int {
	switch {
	case u.hi < v.hi:
		return -1
	case u.hi > v.hi:
		return 1
	case u.lo < v.lo:
		return -1
	case u.lo > v.lo:
		return 1
	}
	return 0
}

func (u u128) less(v u128) bool { return u.cmp(v) < 0 }
func (u u128) isZero() bool     { return u.hi|u.lo == 0 }

// addOne wraps at the top of the space; callers check for u128Max first
// where that matters.
func (u u128) addOne() u128 {
	lo, carry := bits.Add64(u.lo, 1, 0)
	return u128{u.hi + carry, lo}
}

func (u u128) subOne() u128 {
	lo, borrow := bits.Sub64(u.lo, 1, 0)
	return u128{u.hi - borrow, lo}
}

func (u u128) sub(v u128) u128 {
	lo, borrow := bits.Sub64(u.lo, v.lo, 0)
	return u128{u.hi - v.hi - borrow, lo}
}

// addSat adds and saturates at u128Max instead of wrapping.
func (u u128) addSat(v u128) u128 {
	lo, carry := bits.Add64(u.lo, v.lo, 0)
	hi, carry := bits.Add64(u.hi, v.hi, carry)
	if carry != 0 {
		return u128Max
	}
	return u128{hi, lo}
}

// spanLen returns hi-lo+1, saturating for the one span that covers all
// 2^128 values (an IPv6 /0).
func spanLen(lo, hi u128) u128 {
	d := hi.sub(lo)
	if d == u128Max {
		return u128Max
	}
	return d.addOne()
}

// addrValue is the address as an integer (IPv4 in the low 32 bits).
func addrValue(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u64(uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]))
	}
	b := a.As16()
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return u128{hi, lo}
}

func valueAddr(f Family, v u128) netip.Addr {
	if f == IPv4 {
		x := uint32(v.lo)
		return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
	}
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[7-i] = byte(v.hi >> (8 * i))
		b[15-i] = byte(v.lo >> (8 * i))
	}
	return netip.AddrFrom16(b)
}

// Count is a number of addresses. It is exact up to 2^128-1; the only
// larger count, the 2^128 addresses of an IPv6 /0, saturates at 2^128-1.
// Use Int64 for Kubernetes status fields (saturating at 2^63-1) and
// Float64 for metrics.
type Count struct{ v u128 }

// CountOf returns n as a Count.
func CountOf(n uint64) Count { return Count{u64(n)} }

// Uint64 returns the count and whether it fits in a uint64 exactly; when it
// does not, the result is math.MaxUint64.
func (c Count) Uint64() (uint64, bool) {
	if c.v.hi != 0 {
		return math.MaxUint64, false
	}
	return c.v.lo, true
}

// Int64 returns the count saturated at math.MaxInt64, the range of the
// IPAddressPool status fields.
func (c Count) Int64() int64 {
	if c.v.hi != 0 || c.v.lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(c.v.lo)
}

// Float64 returns the count as a float64 (for metrics; rounds above 2^53).
func (c Count) Float64() float64 {
	return float64(c.v.hi)*0x1p64 + float64(c.v.lo)
}

// IsZero reports whether the count is zero.
func (c Count) IsZero() bool { return c.v.isZero() }

// Equal reports whether two counts are equal (also used by go-cmp).
func (c Count) Equal(o Count) bool { return c.v == o.v }

// String formats the count in decimal.
func (c Count) String() string {
	if c.v.hi == 0 {
		return new(big.Int).SetUint64(c.v.lo).String()
	}
	hi := new(big.Int).SetUint64(c.v.hi)
	hi.Lsh(hi, 64)
	return hi.Or(hi, new(big.Int).SetUint64(c.v.lo)).String()
}
