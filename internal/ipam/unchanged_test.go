package ipam

import (
	"reflect"
	"slices"
	"testing"
)

// TestUnchanged: Unchanged says yes exactly where Allocate of the same
// request returns what the Service holds and changes nothing in the book
// (its assignments, holders, counters, the Service's terms and sharing),
// and no where Allocate changes something or fails.
func TestUnchanged(t *testing.T) {
	v4 := mkPool("v4", []string{"10.0.0.0/29"})
	dual := mkPool("dual", []string{"10.0.1.0/29", "2001:db8::/125"})
	tests := []struct {
		name   string
		pools  []Pool
		before []Request // allocated and settled first
		req    Request
		same   bool
	}{
		{"held by the same request", []Pool{v4}, []Request{mkReq("x")}, mkReq("x"), true},
		{"ports in another order", []Pool{v4}, []Request{mkReq("x", share("", "TCP/80", "TCP/443"))},
			mkReq("x", share("", "TCP/443", "TCP/80")), true},
		{"other ports", []Pool{v4}, []Request{mkReq("x", share("", "TCP/80"))}, mkReq("x", share("", "TCP/81")), false},
		{"nothing held", []Pool{v4}, nil, mkReq("x"), false},
		{"another address requested", []Pool{v4}, []Request{mkReq("x")}, mkReq("x", want("10.0.0.5")), false},
		{"the held address requested", []Pool{v4}, []Request{mkReq("x", want("10.0.0.0"))}, mkReq("x", want("10.0.0.0")), true},
		{"the pool no longer admits it", []Pool{v4, dual}, []Request{mkReq("x", eligible("v4", "dual"))},
			mkReq("x", eligible("dual")), false},
		{"a family to add", []Pool{dual}, []Request{mkReq("x")}, mkReq("x", prefer), false},
		{"both families held", []Pool{dual}, []Request{mkReq("x", require)}, mkReq("x", require), true},
		{"prefers two families, the pool has one", []Pool{v4}, []Request{mkReq("x", prefer)}, mkReq("x", prefer), true},
		{"shared, same terms", []Pool{v4}, []Request{mkReq("y", share("k", "TCP/80")), mkReq("x", share("k", "TCP/443"))},
			mkReq("x", share("k", "TCP/443")), true},
		{"shared, a key of its own now", []Pool{v4},
			[]Request{mkReq("y", share("k", "TCP/80")), mkReq("x", share("k", "TCP/443"))},
			mkReq("x", share("other", "TCP/443")), false},
		{"an invalid request", []Pool{v4}, []Request{mkReq("x")}, mkReq("x", want("10.0.0.1", "10.0.0.2")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustBook(t, tt.pools...)
			for _, r := range tt.before {
				if _, err := b.Allocate(withAllEligible(tt.pools, r)); err != nil {
					t.Fatal(err)
				}
				b.Settle(r.Service)
			}
			req := withAllEligible(tt.pools, tt.req)
			got, same := b.Unchanged(req)
			if same != tt.same {
				t.Fatalf("Unchanged says %v, want %v", same, tt.same)
			}
			before := bookTerms(b)
			again, err := b.Allocate(req)
			changed := err != nil || !reflect.DeepEqual(before, bookTerms(b))
			if same && (changed || !reflect.DeepEqual(got, again)) {
				t.Fatalf("Unchanged gave %v, but Allocate gave %v, %v and changed the book: %v", got, again, err, changed)
			}
			if !same && !changed {
				t.Fatalf("Unchanged says no, but Allocate gave %v and changed nothing", again)
			}
		})
	}
}

// termsState is a book's snapshot with each Service's terms and each
// address's sharing key.
type termsState struct {
	Book     state
	Requests map[ServiceKey]Request
	Keys     map[string]SharingKey
}

func bookTerms(b *Book) termsState {
	s := termsState{Book: snapshot(b), Requests: map[ServiceKey]Request{}, Keys: map[string]SharingKey{}}
	for k, h := range b.svcs {
		r := h.req
		r.Ports = slices.Clone(r.Ports) // compared by value, not by backing array
		s.Requests[k] = r
	}
	for a, st := range b.addrs {
		s.Keys[a.String()] = st.key
	}
	return s
}
