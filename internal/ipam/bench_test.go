package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"go4.org/netipx"
)

// Benchmarks compare the Book with refBook, the per-address linear scan,
// on the cases the issue names. Every iteration checks its answer, so a
// benchmark that silently did nothing would fail.

type allocCase struct {
	name      string
	cidr      string
	fam       Family
	prefill   int        // addresses held before timing, from the start
	stride    int        // prefill every stride-th address (0 = 1)
	requested netip.Addr // specific-IP request when valid
	want      netip.Addr // expected address; zero: expect ErrPoolExhausted
}

var allocCases = []allocCase{
	{name: "v4-29-first", cidr: "10.0.0.0/29", fam: IPv4, want: ip("10.0.0.0")},
	{name: "v4-16-last", cidr: "10.0.0.0/16", fam: IPv4, prefill: 65535, want: ip("10.0.255.255")},
	{name: "v4-15-100000th", cidr: "10.0.0.0/15", fam: IPv4, prefill: 99999, want: ip("10.1.134.159")},
	{name: "v6-64-100000th", cidr: "2001:db8::/64", fam: IPv6, prefill: 99999, want: ip("2001:db8::1:869f")},
	{name: "v4-16-exhausted", cidr: "10.0.0.0/16", fam: IPv4, prefill: 65536},
	{name: "v6-64-specific", cidr: "2001:db8::/64", fam: IPv6, prefill: 99999,
		requested: ip("2001:db8::dead:beef:1"), want: ip("2001:db8::dead:beef:1")},
	// 100,000 one-address holes: the free set holds 100,000 spans.
	{name: "v4-8-fragmented-specific", cidr: "10.0.0.0/8", fam: IPv4, prefill: 100000, stride: 2,
		requested: ip("10.1.134.159"), want: ip("10.1.134.159")},
}

func (c allocCase) nth(prefix netip.Prefix, i int) netip.Addr {
	return nthAddr(prefix, i*max(c.stride, 1))
}

// nthAddr returns the n-th address of p (n small enough).
func nthAddr(p netip.Prefix, n int) netip.Addr {
	v := addrValue(p.Addr())
	v.lo += uint64(n)
	return valueAddr(FamilyOf(p.Addr()), v)
}

func benchRequest(c allocCase, name string) Request {
	r := Request{Service: ServiceKey{Namespace: "bench", Name: name}, Primary: c.fam, EligiblePools: []string{"p"}}
	if c.requested.IsValid() {
		r.RequestedIPs = []netip.Addr{c.requested}
	}
	return r
}

// prefilledBook returns a book whose pool p = c.cidr has c.prefill
// addresses taken from the start (every c.stride-th), registered the way
// a restart does.
func prefilledBook(tb testing.TB, c allocCase) *Book {
	bk := mustBook(tb, Pool{Name: "p", Ranges: []netipx.IPRange{rng(c.cidr)}, AutoAssign: true})
	prefix := netip.MustParsePrefix(c.cidr)
	claims := make([]Claim, c.prefill)
	for i := range claims {
		claims[i] = Claim{Request: benchRequest(allocCase{fam: c.fam}, fmt.Sprint("fill-", i)), Addrs: []netip.Addr{c.nth(prefix, i)}}
	}
	if conflicts := bk.Restore(claims); len(conflicts) != 0 {
		tb.Fatalf("prefill: %v", conflicts[0])
	}
	return bk
}

func BenchmarkAllocateRelease(b *testing.B) {
	for _, c := range allocCases {
		b.Run("case="+c.name+"/impl=book", func(b *testing.B) {
			bk := prefilledBook(b, c)
			req := benchRequest(c, "svc")
			b.ReportAllocs()
			for b.Loop() {
				got, err := bk.Allocate(req)
				checkBench(b, c, got.Addrs, err)
				bk.Release(req.Service)
			}
		})
		b.Run("case="+c.name+"/impl=linear", func(b *testing.B) {
			ref := newRefBook(Pool{Name: "p", Ranges: []netipx.IPRange{rng(c.cidr)}, AutoAssign: true})
			prefix := netip.MustParsePrefix(c.cidr)
			for i := range c.prefill {
				if err := ref.assign(ServiceKey{Name: fmt.Sprint("fill-", i)}, c.nth(prefix, i)); err != nil {
					b.Fatal(err)
				}
			}
			key := ServiceKey{Namespace: "bench", Name: "svc"}
			b.ReportAllocs()
			for b.Loop() {
				var got netip.Addr
				var err error
				if c.requested.IsValid() {
					got, err = c.requested, ref.assign(key, c.requested)
				} else {
					got, err = ref.allocate(key, "p", c.fam)
				}
				if errors.Is(err, errRefFull) {
					err = ErrPoolExhausted
				}
				checkBench(b, c, []netip.Addr{got}, err)
				ref.release(key)
			}
		})
	}
}

func checkBench(b *testing.B, c allocCase, got []netip.Addr, err error) {
	if !c.want.IsValid() {
		if !errors.Is(err, ErrPoolExhausted) {
			b.Fatalf("want exhaustion, got %v %v", got, err)
		}
		return
	}
	if err != nil || len(got) != 1 || got[0] != c.want {
		b.Fatalf("got %v %v, want %s", got, err, c.want)
	}
}

// restoreClaims returns n claims for every third address of 10.0.0.0/8,
// so each leaves a hole and the free sets hold n spans: the worst case
// for the span representation.
func restoreClaims(n int) []Claim {
	prefix := netip.MustParsePrefix("10.0.0.0/8")
	claims := make([]Claim, n)
	for i := range claims {
		claims[i] = Claim{
			Request: Request{
				Service:       ServiceKey{Namespace: fmt.Sprint("ns-", i%100), Name: fmt.Sprint("svc-", i)},
				Primary:       IPv4,
				EligiblePools: []string{"p"},
				Sharing:       SharingKey{Sharing: "k"},
				Ports:         []Port{{"TCP", 80}},
			},
			Addrs:   []netip.Addr{nthAddr(prefix, 3*i+1)},
			Created: t0.Add(time.Duration(i) * time.Second),
		}
	}
	return claims
}

const restoreN = 100_000

var restorePools = []Pool{{Name: "p", Ranges: []netipx.IPRange{rng("10.0.0.0/8")}, AutoAssign: true}}

func BenchmarkRestore100k(b *testing.B) {
	claims := restoreClaims(restoreN)
	b.Run("impl=book", func(b *testing.B) {
		perAssignment := heapPerAssignment(b, func() any {
			bk := mustBook(b, restorePools...)
			bk.Restore(claims)
			return bk
		})
		b.ReportAllocs()
		for b.Loop() {
			bk := mustBook(b, restorePools...)
			if c := bk.Restore(claims); len(c) != 0 || len(bk.svcs) != restoreN {
				b.Fatalf("Restore: %d conflicts, %d services", len(c), len(bk.svcs))
			}
		}
		// Reported after the loop: b.Loop resets user metrics.
		b.ReportMetric(perAssignment, "B/assignment")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/restoreN, "ns/assignment")
	})
	b.Run("impl=linear", func(b *testing.B) {
		load := func() *refBook {
			ref := newRefBook(restorePools...)
			for _, c := range claims {
				if err := ref.assign(c.Request.Service, c.Addrs[0]); err != nil {
					b.Fatal(err)
				}
			}
			return ref
		}
		perAssignment := heapPerAssignment(b, func() any { return load() })
		b.ReportAllocs()
		for b.Loop() {
			if ref := load(); len(ref.held) != restoreN {
				b.Fatalf("%d held", len(ref.held))
			}
		}
		b.ReportMetric(perAssignment, "B/assignment")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/restoreN, "ns/assignment")
	})
}

// heapPerAssignment measures the live heap that build leaves behind,
// divided by restoreN. The claims themselves are allocated before.
func heapPerAssignment(b *testing.B, build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	if after.HeapAlloc <= before.HeapAlloc {
		b.Fatal("no heap growth measured")
	}
	return float64(after.HeapAlloc-before.HeapAlloc) / restoreN
}

// BenchmarkSharedKeyClash allocates for a Service whose sharing key is held
// on many addresses, every one of them by a Service on the same port: no
// address can be shared, and the answer is the first free one. The sharing
// index groups addresses by their holders' ports, so the cost must not grow
// with the number of holders.
func BenchmarkSharedKeyClash(b *testing.B) {
	for _, holders := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("holders=%d", holders), func(b *testing.B) {
			prefix := netip.MustParsePrefix("10.0.0.0/16")
			bk := mustBook(b, Pool{Name: "p", Ranges: []netipx.IPRange{netipx.RangeOfPrefix(prefix)}, AutoAssign: true})
			claims := make([]Claim, holders)
			for i := range claims {
				claims[i] = Claim{Request: Request{Service: ServiceKey{Namespace: "fill", Name: fmt.Sprint("svc-", i)},
					Primary: IPv4, EligiblePools: []string{"p"}, Sharing: SharingKey{Sharing: "k"}, Ports: []Port{{"TCP", 80}}},
					Addrs: []netip.Addr{nthAddr(prefix, i)}}
			}
			if conflicts := bk.Restore(claims); len(conflicts) != 0 {
				b.Fatalf("prefill: %v", conflicts[0])
			}
			req := Request{Service: ServiceKey{Namespace: "bench", Name: "svc"}, Primary: IPv4,
				EligiblePools: []string{"p"}, Sharing: SharingKey{Sharing: "k"}, Ports: []Port{{"TCP", 80}}}
			wantAddr := nthAddr(prefix, holders)
			b.ReportAllocs()
			for b.Loop() {
				got, err := bk.Allocate(req)
				if err != nil || got.Addrs[0] != wantAddr {
					b.Fatalf("got %v %v, want %s", got, err, wantAddr)
				}
				bk.Release(req.Service)
			}
		})
	}
}
