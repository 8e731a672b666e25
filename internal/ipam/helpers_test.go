package ipam

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go4.org/netipx"
)

// rng parses "a-b" or a CIDR.
func rng(s string) netipx.IPRange {
	if strings.Contains(s, "/") {
		return netipx.RangeOfPrefix(netip.MustParsePrefix(s))
	}
	if !strings.Contains(s, "-") {
		a := netip.MustParseAddr(s)
		return netipx.IPRangeFrom(a, a)
	}
	return netipx.MustParseIPRange(s)
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func ips(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = ip(s)
	}
	return out
}

// poolOpt and reqOpt are functional options for the builders below.
type poolOpt func(*Pool)

func noAuto(p *Pool) { p.AutoAssign = false }
func buggy(p *Pool)  { p.AvoidBuggyIPs = true }
func withSA(p *Pool) { p.HasServiceAllocation = true }
func prio(n int) poolOpt {
	return func(p *Pool) { p.HasServiceAllocation, p.Priority = true, n }
}

// mkPool builds an autoAssign pool over ranges, then applies opts.
func mkPool(name string, ranges []string, opts ...poolOpt) Pool {
	p := Pool{Name: name, AutoAssign: true}
	for _, r := range ranges {
		p.Ranges = append(p.Ranges, rng(r))
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

type reqOpt func(*Request)

func v6(r *Request)      { r.Primary = IPv6 }
func prefer(r *Request)  { r.Policy = PreferDualStack }
func require(r *Request) { r.Policy = RequireDualStack }
func pinned(p string) reqOpt {
	return func(r *Request) { r.Pool = p }
}
func want(ss ...string) reqOpt {
	return func(r *Request) { r.RequestedIPs = ips(ss...) }
}
func eligible(names ...string) reqOpt {
	return func(r *Request) { r.EligiblePools = append([]string{}, names...) }
}
func share(key string, ports ...string) reqOpt {
	return func(r *Request) {
		r.Sharing.Sharing = key
		r.Ports = nil
		for _, p := range ports {
			proto, num, _ := strings.Cut(p, "/")
			n := 0
			for _, c := range num {
				n = n*10 + int(c-'0')
			}
			r.Ports = append(r.Ports, Port{Protocol: proto, Port: int32(n)})
		}
	}
}
func backend(sel string) reqOpt {
	return func(r *Request) { r.Sharing.Backend = sel }
}

func svc(name string) ServiceKey { return ServiceKey{Namespace: "ns", Name: name} }

// mkReq builds a single-stack IPv4 request of ns/name. EligiblePools left
// nil is filled with every pool by the runner.
func mkReq(name string, opts ...reqOpt) Request {
	r := Request{Service: svc(name), Primary: IPv4}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func withAllEligible(pools []Pool, r Request) Request {
	if r.EligiblePools == nil {
		for _, p := range pools {
			r.EligiblePools = append(r.EligiblePools, p.Name)
		}
	}
	return r
}

func asg(pool string, addrs ...string) Assignment {
	return Assignment{Pool: pool, Addrs: ips(addrs...)}
}

func mustBook(t testing.TB, pools ...Pool) *Book {
	t.Helper()
	b, err := New(pools)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// step is one operation of a scenario and what it must return.
type step struct {
	alloc   *Request   // Allocate this (and Settle it on success, unless pending)
	pending bool       // leave what the Allocate gave up unconfirmed
	retain  *Request   // or Allocate this, which must fail, then Retain it
	settle  ServiceKey // or Settle this
	release ServiceKey // or Release this
	want    Assignment // expected assignment (Allocate)
	err     string     // expected error text ("" = success)
	is      error      // and the reason it must match
	// After the step, these Services must hold exactly this.
	holds map[ServiceKey]Assignment
}

func alloc(r Request, want Assignment) step { return step{alloc: &r, want: want} }
func fails(r Request, is error, msg string) step {
	return step{alloc: &r, err: msg, is: is}
}
func release(name string) step { return step{release: svc(name)} }

// allocPending allocates like alloc, but leaves what the Service gave up
// unconfirmed, as while the controller's write is in flight.
func allocPending(r Request, want Assignment) step { return step{alloc: &r, want: want, pending: true} }

// retains runs a request Allocate refuses, then Retain, which must keep want.
func retains(r Request, is error, want Assignment) step {
	return step{retain: &r, is: is, want: want}
}
func settle(name string) step { return step{settle: svc(name)} }

func runSteps(t *testing.T, pools []Pool, steps []step) *Book {
	t.Helper()
	b := mustBook(t, pools...)
	for i, s := range steps {
		switch {
		case s.alloc != nil:
			got, err := b.Allocate(withAllEligible(pools, *s.alloc))
			checkErr(t, i, err, s.err, s.is)
			if err == nil && !s.pending {
				// As the controller does once the API server confirmed the write.
				b.Settle(s.alloc.Service)
			}
			if err == nil {
				if d := diff(s.want, got); d != "" {
					t.Fatalf("step %d: Allocate(%s) (-want +got):\n%s", i, s.alloc.Service, d)
				}
			}
		case s.retain != nil:
			r := withAllEligible(pools, *s.retain)
			if _, err := b.Allocate(r); !errors.Is(err, s.is) {
				t.Fatalf("step %d: Allocate(%s) = %v, want an error matching %v", i, r.Service, err, s.is)
			}
			if d := diff(s.want, b.Retain(r)); d != "" {
				t.Fatalf("step %d: Retain(%s) (-want +got):\n%s", i, r.Service, d)
			}
		case s.settle != ServiceKey{}:
			b.Settle(s.settle)
		case s.release != ServiceKey{}:
			b.Release(s.release)
		}
		for k, want := range s.holds {
			got, _ := b.Assigned(k)
			if d := diff(want, got); d != "" {
				t.Fatalf("step %d: Assigned(%s) (-want +got):\n%s", i, k, d)
			}
		}
		checkInvariants(t, b)
	}
	return b
}

func checkErr(t testing.TB, i int, err error, msg string, is error) {
	t.Helper()
	switch {
	case msg == "" && err != nil:
		t.Fatalf("step %d: unexpected error %v", i, err)
	case msg != "" && err == nil:
		t.Fatalf("step %d: got success, want error %q", i, msg)
	case err != nil && err.Error() != msg:
		t.Fatalf("step %d: error text\n got %q\nwant %q", i, err.Error(), msg)
	case err != nil && is != nil && !errors.Is(err, is):
		t.Fatalf("step %d: error %q does not match %v", i, err, is)
	}
}

// diff is cmp.Diff that compares addresses as values.
func diff(want, got any) string {
	return cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{}, netipx.IPRange{}, span{}, u128{}), cmpopts.EquateEmpty())
}

// eligibleHeld reports whether the request svc holds by admits pool.
func (b *Book) eligibleHeld(svc ServiceKey, pool string) bool {
	h := b.svcs[svc]
	return h != nil && h.req.eligible(pool)
}
