package ipam

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fuzz universe: small pools so that collisions, exhaustion and
// sharing happen often.
var (
	fuzzRanges = []string{
		"10.0.0.0/30", "10.0.0.4/31", "10.0.0.254-10.0.1.1", "10.0.2.0/31",
		"2001:db8::/126", "2001:db8::4/127", "2001:db8::ff-2001:db8::101",
	}
	fuzzAddrs = ips("10.0.0.0", "10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.0.255", "10.0.1.0",
		"10.0.1.1", "10.0.2.1", "2001:db8::", "2001:db8::1", "2001:db8::4", "2001:db8::100",
		"192.0.2.1", "2001:db8:ff::1")
	fuzzPoolNames = []string{"a", "b", "c"}
	fuzzPorts     = []Port{{"TCP", 80}, {"TCP", 443}, {"UDP", 80}}
	fuzzServices  = 10
)

// reader hands out fuzz bytes; past the end it returns zeros.
type reader struct{ b []byte }

func (r *reader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return int(v)
}

func (r *reader) pick(n int) int { return r.next() % n }

// pools builds a pool set: each menu range goes to one pool or none, in
// menu order or reversed; one time in eight a range is given twice, which
// makes the set invalid on purpose.
func (r *reader) pools() []Pool {
	out := make([]Pool, len(fuzzPoolNames))
	for i, name := range fuzzPoolNames {
		flags := r.next()
		out[i] = Pool{Name: name, AutoAssign: flags&3 != 0, AvoidBuggyIPs: flags&4 != 0,
			HasServiceAllocation: flags&8 != 0, Priority: (flags >> 4) % 3}
	}
	for _, s := range fuzzRanges {
		if owner := r.pick(4); owner < len(out) {
			out[owner].Ranges = append(out[owner].Ranges, rng(s))
		}
	}
	for i := range out {
		if r.pick(2) == 0 {
			slices.Reverse(out[i].Ranges)
		}
	}
	if r.pick(8) == 0 {
		out[2].Ranges = append(out[2].Ranges, rng(fuzzRanges[r.pick(len(fuzzRanges))]))
	}
	return out
}

func (r *reader) subset(names []string) []string {
	m1, m2 := r.next(), r.next()
	mask := m1 & m2 // each pool excluded one time in four
	var out []string
	for i, n := range names {
		if mask&(1<<i) == 0 {
			out = append(out, n)
		}
	}
	return out
}

func (r *reader) request(svcName string) Request {
	req := Request{Service: svc(svcName), Policy: FamilyPolicy(r.pick(3)), Primary: Family(1 + r.pick(2))}
	if n := r.pick(8); n >= 6 {
		for range n - 5 {
			req.RequestedIPs = append(req.RequestedIPs, fuzzAddrs[r.pick(len(fuzzAddrs))])
		}
	}
	if n := r.pick(16); n < 4 {
		req.Pool = append(fuzzPoolNames, "ghost")[n]
	}
	req.EligiblePools = r.subset(fuzzPoolNames)
	req.Sharing = SharingKey{Sharing: []string{"", "k1", "k2", "k1"}[r.pick(4)], Backend: []string{"", "", "sel"}[r.pick(3)]}
	mask := r.next()
	for i, p := range fuzzPorts {
		if mask&(1<<i) != 0 {
			req.Ports = append(req.Ports, p)
		}
	}
	return req
}

// fuzzRun is one replay of an operation sequence.
type fuzzRun struct {
	t     *testing.T
	pools []Pool
	b     *Book
	trace []string
}

func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 0xff, 0, 0x13, 4, 0, 0})
	f.Add([]byte("allocate, release, restore and reconfigure, in some order"))
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		seed := make([]byte, 600)
		for i := range seed {
			seed[i] = byte(rnd.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		first := runOps(t, data)
		second := runOps(t, data)
		if !slices.Equal(first, second) {
			t.Fatalf("replay differs (-first +second):\n%s", diff(first, second))
		}
	})
}

func runOps(t *testing.T, data []byte) []string {
	r := &reader{b: data}
	fr := &fuzzRun{t: t}
	for {
		pools := r.pools()
		if b, err := New(pools); err == nil {
			fr.pools, fr.b = pools, b
			break
		}
		if len(r.b) == 0 {
			return nil
		}
	}
	for len(r.b) > 0 {
		name := fmt.Sprintf("s%d", r.pick(fuzzServices))
		switch op := r.pick(9); op {
		case 0, 1, 2, 3:
			req := r.request(name)
			if op == 3 {
				req = fr.again(name, r)
			}
			fr.allocate(req, r.pick(2) == 0)
			if r.pick(3) != 0 {
				fr.settle(name)
			}
		case 8:
			fr.settle(name)
		case 4:
			fr.b.Release(svc(name))
			fr.trace = append(fr.trace, "release "+name)
		case 5:
			fr.reconfigure(r)
		default:
			fr.restore(r)
		}
		checkInvariants(t, fr.b)
		if !fr.anyLeaving() {
			// A restart sees only what the API server shows: with an
			// unconfirmed release pending, the live book holds more.
			fr.checkRestoreReproduces()
		}
	}
	fr.trace = append(fr.trace, fmt.Sprint(snapshot(fr.b)))
	return fr.trace
}

// settle is the controller's step after the API server confirmed a write.
func (fr *fuzzRun) settle(name string) {
	freed := fr.b.Settle(svc(name))
	fr.trace = append(fr.trace, fmt.Sprintf("settle %s -> %v", name, freed))
}

func (fr *fuzzRun) anyLeaving() bool {
	for _, h := range fr.b.svcs {
		if len(h.leaving) > 0 {
			return true
		}
	}
	return false
}

// again is the request a Service holds its addresses by, its ports in
// reverse order half the time (a Service decided again, unchanged, as
// most are after a restart); a fresh request for one that holds nothing.
func (fr *fuzzRun) again(name string, r *reader) Request {
	req, ok := fr.b.HeldRequest(svc(name))
	if !ok {
		return r.request(name)
	}
	req.Ports = slices.Clone(req.Ports)
	if r.pick(2) == 0 {
		slices.Reverse(req.Ports)
	}
	return req
}

// allocate runs Allocate and, when it fails and retain is set, Retain, as
// the controller does for a parsed request it cannot serve. Where
// Unchanged says Allocate changes nothing, it must not.
func (fr *fuzzRun) allocate(req Request, retain bool) {
	before, terms := snapshot(fr.b), bookTerms(fr.b)
	unchanged, same := fr.b.Unchanged(req)
	_, held := fr.b.Assigned(req.Service)
	got, err := fr.b.Allocate(req)
	fr.trace = append(fr.trace, fmt.Sprintf("allocate %+v -> %v %v (unchanged: %v)", req, got, err, same))
	if same && (err != nil || !reflect.DeepEqual(got, unchanged) || !reflect.DeepEqual(terms, bookTerms(fr.b))) {
		fr.t.Fatalf("Unchanged said %v, but Allocate gave %v, %v and the book went (-before +after):\n%s",
			unchanged, got, err, diff(terms, bookTerms(fr.b)))
	}
	if err != nil {
		if after := snapshot(fr.b); !reflect.DeepEqual(before, after) {
			fr.t.Fatalf("failed Allocate changed the book (-before +after):\n%s", diff(before, after))
		}
		if !matchesOneReason(err) {
			fr.t.Fatalf("error %q matches no reason", err)
		}
		if retain {
			kept := fr.b.Retain(req)
			fr.trace = append(fr.trace, fmt.Sprintf("retain -> %v", kept))
			fr.checkRetained(req, before.Assigned[req.Service], kept)
		}
	} else {
		fr.checkSatisfies(req, got)
	}
	if !held {
		fr.checkAgainstReference(req, got, err)
	}
}

// checkRetained checks that Retain kept a subset of what the Service held,
// that what it kept satisfies the request's pool and families, and that
// what it dropped stays reserved until Settle.
func (fr *fuzzRun) checkRetained(req Request, had, kept Assignment) {
	t := fr.t
	for _, a := range kept.Addrs {
		if !slices.Contains(had.Addrs, a) {
			t.Fatalf("%s: Retain kept %s, which it did not hold (%v)", req.Service, a, had)
		}
		if !req.Policy.wants(req.Primary, FamilyOf(a)) {
			t.Fatalf("%s: Retain kept %s of a family %v does not want", req.Service, a, req.Policy)
		}
	}
	if len(kept.Addrs) > 0 && (!req.eligible(kept.Pool) || (req.Pool != "" && req.Pool != kept.Pool)) {
		t.Fatalf("%s: Retain kept pool %q; eligible %v, pinned %q", req.Service, kept.Pool, req.EligiblePools, req.Pool)
	}
	for _, a := range had.Addrs {
		if !slices.Contains(kept.Addrs, a) && fr.b.addrs[a] == nil {
			t.Fatalf("%s: Retain freed %s before Settle", req.Service, a)
		}
	}
}

func matchesOneReason(err error) bool {
	n := 0
	for _, r := range []error{ErrPoolExhausted, ErrRequestedIPInUse, ErrNoMatchingPool, ErrInvalidRequest} {
		if errors.Is(err, r) {
			n++
		}
	}
	return n == 1
}

// checkSatisfies checks a successful assignment against the request.
func (fr *fuzzRun) checkSatisfies(req Request, a Assignment) {
	t := fr.t
	if !req.eligible(a.Pool) || (req.Pool != "" && a.Pool != req.Pool) {
		t.Fatalf("%s got pool %q; eligible %v, pinned %q", req.Service, a.Pool, req.EligiblePools, req.Pool)
	}
	if len(req.RequestedIPs) > 0 && !slices.Equal(sortedAddrs(req.RequestedIPs), a.Addrs) {
		t.Fatalf("%s requested %v, got %v", req.Service, req.RequestedIPs, a.Addrs)
	}
	for _, addr := range a.Addrs {
		if p, _ := fr.b.PoolOf(addr); p != a.Pool || !req.Policy.wants(req.Primary, FamilyOf(addr)) {
			t.Fatalf("%s got %s (pool %q) in assignment %v", req.Service, addr, p, a)
		}
	}
	if req.Policy == RequireDualStack && len(a.Addrs) != 2 {
		t.Fatalf("%s requires dual stack, got %v", req.Service, a.Addrs)
	}
}

// checkAgainstReference compares a fresh, pinned, single-stack,
// non-sharing allocation with the linear scan.
func (fr *fuzzRun) checkAgainstReference(req Request, got Assignment, err error) {
	if req.Policy != SingleStack || len(req.RequestedIPs) > 0 || req.Pool == "" || req.Sharing.Sharing != "" || !req.eligible(req.Pool) {
		return
	}
	i := slices.IndexFunc(fr.pools, func(p Pool) bool { return p.Name == req.Pool })
	if i < 0 {
		return
	}
	want, ok := refLowest(fr.pools[i], req.Primary, func(a netip.Addr) bool {
		return fr.b.addrs[a] != nil && !slices.Contains(got.Addrs, a) // held, or being given up
	})
	switch {
	case ok && (err != nil || got.Addrs[0] != want):
		fr.t.Fatalf("%s from %q: got %v %v, reference %s", req.Service, req.Pool, got, err, want)
	case !ok && err == nil:
		fr.t.Fatalf("%s from %q: got %v, reference finds nothing", req.Service, req.Pool, got)
	}
}

func (fr *fuzzRun) reconfigure(r *reader) {
	pools := r.pools()
	var eligible func(ServiceKey) []string
	if r.pick(2) == 0 {
		masks := map[ServiceKey][]string{}
		for _, k := range fr.b.Services() {
			masks[k] = r.subset(fuzzPoolNames)
		}
		eligible = func(k ServiceKey) []string { return masks[k] }
	}
	before := snapshot(fr.b)
	rep, err := fr.b.Reconfigure(pools, eligible)
	fr.trace = append(fr.trace, fmt.Sprintf("reconfigure -> %v %v %v", texts(rep.Invalid), rep.Moved, err))
	if err != nil {
		if after := snapshot(fr.b); !reflect.DeepEqual(before, after) {
			fr.t.Fatalf("failed Reconfigure changed the book:\n%s", diff(before, after))
		}
		return
	}
	fr.pools = pools
	invalid := fr.invalidHolders()
	for _, c := range rep.Invalid {
		if !invalid[c.Service] && !strings.Contains(c.Err.Error(), "asks for pool") {
			fr.t.Fatalf("reported invalid but valid: %v", c)
		}
	}
}

func (fr *fuzzRun) restore(r *reader) {
	var claims []Claim
	for range 1 + r.pick(3) {
		name := fmt.Sprintf("s%d", r.pick(fuzzServices))
		c := Claim{Request: r.request(name), Created: t0.Add(time.Duration(r.pick(4)) * time.Second)}
		for range r.pick(3) {
			c.Addrs = append(c.Addrs, fuzzAddrs[r.pick(len(fuzzAddrs))])
		}
		claims = append(claims, c)
	}
	conflicts := fr.b.Restore(claims)
	fr.trace = append(fr.trace, fmt.Sprintf("restore -> %v", texts(conflicts)))
}

// invalidHolders returns the Services whose holdings Restore would refuse
// in a fresh book: an address in no pool or excluded, in a pool the
// Service is not eligible for, or addresses in two pools.
func (fr *fuzzRun) invalidHolders() map[ServiceKey]bool {
	out := map[ServiceKey]bool{}
	for _, k := range fr.b.Services() {
		h := fr.b.svcs[k]
		pools := map[string]bool{}
		for _, a := range h.addrs {
			p, ok := fr.b.PoolOf(a)
			if !ok || !h.req.eligible(p) {
				out[k] = true
			}
			pools[p] = true
		}
		if len(pools) > 1 {
			out[k] = true
		}
	}
	return out
}

// checkRestoreReproduces restores a snapshot of every assignment into
// fresh books, in two claim orders, and compares.
func (fr *fuzzRun) checkRestoreReproduces() {
	t := fr.t
	var claims []Claim
	for i, k := range fr.b.Services() {
		h := fr.b.svcs[k]
		claims = append(claims, Claim{Request: h.req, Addrs: h.addrs, Created: t0.Add(time.Duration(i%3) * time.Second)})
	}
	invalid := fr.invalidHolders()
	fresh := mustBook(t, fr.pools...)
	conflicts := fresh.Restore(claims)
	for _, c := range conflicts {
		if !invalid[c.Service] {
			t.Fatalf("restoring a valid holding failed: %v", c)
		}
	}
	checkInvariants(t, fresh)
	// RestoreSorted over the same claims in order, which it takes over
	// (so copies of their slices): the same book.
	inOrder := mustBook(t, fr.pools...)
	sorted := make([]Claim, len(claims))
	for i, c := range claims {
		c.Addrs = slices.Clone(c.Addrs)
		c.Request.RequestedIPs = slices.Clone(c.Request.RequestedIPs)
		c.Request.Ports = slices.Clone(c.Request.Ports)
		c.Request.EligiblePools = slices.Clone(c.Request.EligiblePools)
		sorted[i] = c
	}
	slices.SortFunc(sorted, func(x, y Claim) int {
		return compareClaims(x.Created, x.Request.Service, y.Created, y.Request.Service)
	})
	if x, y := texts(conflicts), texts(inOrder.RestoreSorted(len(sorted), slices.Values(pointers(sorted)))); !slices.Equal(x, y) {
		t.Fatalf("RestoreSorted's conflicts differ from Restore's:\n%s", diff(x, y))
	}
	if x, y := snapshot(fresh), snapshot(inOrder); !reflect.DeepEqual(x, y) {
		t.Fatalf("RestoreSorted's state differs from Restore's:\n%s", diff(x, y))
	}
	rev := mustBook(t, fr.pools...)
	slices.Reverse(claims)
	if x, y := texts(conflicts), texts(rev.Restore(claims)); !slices.Equal(x, y) {
		t.Fatalf("claim order changed the conflicts:\n%s", diff(x, y))
	}
	if x, y := snapshot(fresh), snapshot(rev); !reflect.DeepEqual(x, y) {
		t.Fatalf("claim order changed the state:\n%s", diff(x, y))
	}
	if len(invalid) == 0 {
		if x, y := snapshot(fr.b), snapshot(fresh); !reflect.DeepEqual(x, y) {
			t.Fatalf("restored state differs (-live +restored):\n%s", diff(x, y))
		}
		return
	}
	for _, k := range fr.b.Services() {
		if invalid[k] {
			continue
		}
		want, _ := fr.b.Assigned(k)
		if got, _ := fresh.Assigned(k); !reflect.DeepEqual(want, got) {
			t.Fatalf("restored %s: got %v, want %v", k, got, want)
		}
	}
}
