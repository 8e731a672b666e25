package ipam

import (
	"net/netip"
	"testing"
)

func TestSpanSet(t *testing.T) {
	s := newSpanSet(u64(10), u64(19), false)
	steps := []struct {
		take  bool
		x     uint64
		ok    bool
		spans []span
	}{
		{true, 10, true, []span{{u64(11), u64(19)}}},
		{true, 15, true, []span{{u64(11), u64(14)}, {u64(16), u64(19)}}},
		{true, 15, false, []span{{u64(11), u64(14)}, {u64(16), u64(19)}}},
		{true, 19, true, []span{{u64(11), u64(14)}, {u64(16), u64(18)}}},
		{false, 15, true, []span{{u64(11), u64(18)}}},
		{false, 15, false, []span{{u64(11), u64(18)}}},
		{false, 10, true, []span{{u64(10), u64(18)}}},
		{false, 19, true, []span{{u64(10), u64(19)}}},
		{true, 12, true, []span{{u64(10), u64(11)}, {u64(13), u64(19)}}},
		{true, 11, true, []span{{u64(10), u64(10)}, {u64(13), u64(19)}}},
		{false, 11, true, []span{{u64(10), u64(11)}, {u64(13), u64(19)}}},
	}
	for i, st := range steps {
		var ok bool
		if st.take {
			ok = s.take(u64(st.x))
		} else {
			ok = s.put(u64(st.x))
		}
		if ok != st.ok {
			t.Fatalf("step %d: ok = %v", i, ok)
		}
		if d := diff(st.spans, s.spans()); d != "" {
			t.Fatalf("step %d: spans (-want +got):\n%s", i, d)
		}
	}
}

func TestSpanSetTopOfSpace(t *testing.T) {
	s := newSpanSet(u128Max.subOne(), u128Max, false)
	if !s.take(u128Max) || !s.take(u128Max.subOne()) || !s.put(u128Max) || s.put(u128Max) {
		t.Fatal("take/put at the top of the 128-bit space")
	}
	if d := diff([]span{{u128Max, u128Max}}, s.spans()); d != "" {
		t.Fatalf("spans (-want +got):\n%s", d)
	}
}

// FuzzSpanSet drives take/put on a 64-index set and compares it with a
// bitmap.
func FuzzSpanSet(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 130, 129, 63, 191})
	f.Add([]byte{5, 5, 133, 133, 4, 6, 133})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := newSpanSet(u64(0), u64(63), false)
		var used uint64
		for _, op := range ops {
			x := uint64(op & 63)
			bit := uint64(1) << x
			if op&128 == 0 {
				if got, want := s.take(u64(x)), used&bit == 0; got != want {
					t.Fatalf("take(%d) = %v, want %v", x, got, want)
				}
				used |= bit
			} else {
				if got, want := s.put(u64(x)), used&bit != 0; got != want {
					t.Fatalf("put(%d) = %v, want %v", x, got, want)
				}
				used &^= bit
			}
			checkSpans(t, s, used)
		}
	})
}

func checkSpans(t *testing.T, s *spanSet, used uint64) {
	t.Helper()
	var free uint64
	prev := -2
	for _, sp := range s.spans() {
		if int(sp.lo.lo) <= prev+1 {
			t.Fatalf("spans %v not disjoint and non-adjacent", s.spans())
		}
		for i := sp.lo.lo; i <= sp.hi.lo; i++ {
			free |= 1 << i
		}
		prev = int(sp.hi.lo)
	}
	if free != ^used {
		t.Fatalf("free %064b, want %064b", free, ^used)
	}
	var n uint64
	for x := ^used; x != 0; x &= x - 1 {
		n++
	}
	if s.n != u64(n) {
		t.Fatalf("count %v, want %d", s.n, n)
	}
	if m, ok := s.min(); ok != (n > 0) || (ok && used&(1<<m.lo) != 0) {
		t.Fatalf("min = %v, %v", m, ok)
	}
}

// FuzzBuggyIndex checks that the avoidBuggyIPs numbering is a dense,
// order-preserving bijection onto the usable IPv4 addresses.
func FuzzBuggyIndex(f *testing.F) {
	for _, v := range []uint32{0, 1, 254, 255, 256, 0xffffff00, 0xfffffffe, 0xffffffff} {
		f.Add(v)
	}
	rs := newPool(mkPool("all", []string{"0.0.0.0/0"}, buggy)).ranges[0]
	f.Fuzz(func(t *testing.T, v uint32) {
		a := valueAddr(IPv4, u64(uint64(v)))
		i, ok := rs.index(a)
		if o := v & 0xff; ok != (o != 0 && o != 255) {
			t.Fatalf("%s usable = %v", a, ok)
		}
		if !ok {
			c, cok := ceilUsable(v)
			if cok && (c <= v || c-v > 2) {
				t.Fatalf("ceilUsable(%s) = %s", a, valueAddr(IPv4, u64(uint64(c))))
			}
			return
		}
		if back := rs.addr(i); back != a {
			t.Fatalf("addr(index(%s)) = %s", a, back)
		}
		// The next usable address has the next index.
		next, nok := ceilUsable(v + 1)
		if v != 0xfffffffe && nok {
			if j, _ := rs.index(valueAddr(IPv4, u64(uint64(next)))); j != i.addOne() {
				t.Fatalf("index(%s) = %v, index(%s) = %v", a, i, netip.Addr(valueAddr(IPv4, u64(uint64(next)))), j)
			}
		}
	})
}

// FuzzAddrValue checks that addresses and 128-bit values round-trip.
func FuzzAddrValue(f *testing.F) {
	f.Add([]byte{10, 0, 0, 1})
	f.Add([]byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		if back := valueAddr(FamilyOf(a), addrValue(a)); back != a {
			t.Fatalf("%s round-trips to %s", a, back)
		}
		if a.IsValid() && a != netip.IPv6Unspecified() && a != netip.IPv4Unspecified() {
			prev := a.Prev()
			if addrValue(prev).addOne() != addrValue(a) {
				t.Fatalf("value(%s)+1 != value(%s)", prev, a)
			}
		}
	})
}
