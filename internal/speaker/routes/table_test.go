package routes

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

var (
	web   = types.NamespacedName{Namespace: "shop", Name: "web"}
	dns   = types.NamespacedName{Namespace: "shop", Name: "dns"}
	plain = &Attrs{}
	gold  = &Attrs{LocalPref: 200, Communities: []uint32{65000<<16 | 1}}
	tag   = &Attrs{Communities: []uint32{65000<<16 | 2}, LargeCommunities: []config.LargeCommunity{{GlobalAdministrator: 1, LocalData1: 2, LocalData2: 3}}}
)

func key(session, prefix string) Key { return Key{session, netip.MustParsePrefix(prefix)} }

var cmpOpts = []cmp.Option{
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmpopts.EquateEmpty(),
}

// step is one change to the table and the sends it must cause.
type step struct {
	name    string
	src     types.NamespacedName
	entries []Entry
	want    []Change
}

func TestTableSendsOnlyWhatChanged(t *testing.T) {
	p32 := netip.MustParsePrefix("198.51.100.1/32")
	agg := netip.MustParsePrefix("198.51.100.0/24")
	steps := []step{
		{name: "first Service advertises", src: web, entries: []Entry{{key("r1", "198.51.100.1/32"), plain}, {key("r2", "198.51.100.1/32"), plain}},
			want: []Change{{Session: "r1", Advertise: []bgp.Route{{Prefix: p32}}}, {Session: "r2", Advertise: []bgp.Route{{Prefix: p32}}}}},
		{name: "a second contribution to the same route sends nothing", src: dns, entries: []Entry{{key("r1", "198.51.100.1/32"), plain}}},
		{name: "the first leaves, the second keeps the route on r1", src: web,
			want: []Change{{Session: "r2", Withdraw: []netip.Prefix{p32}}}},
		{name: "attributes merge: communities join, localPref is sent", src: web, entries: []Entry{{key("r1", "198.51.100.1/32"), gold}},
			want: []Change{{Session: "r1", Advertise: []bgp.Route{{Prefix: p32, LocalPref: 200, Communities: []uint32{65000<<16 | 1}}}}}},
		{name: "the last contribution leaves", src: dns, entries: nil},
		{name: "aggregated addresses share one route", src: dns, entries: []Entry{{key("r1", "198.51.100.0/24"), tag}, {key("r1", "198.51.100.0/24"), tag}},
			want: []Change{{Session: "r1", Advertise: []bgp.Route{{Prefix: agg, Communities: []uint32{65000<<16 | 2}, LargeCommunities: []config.LargeCommunity{{GlobalAdministrator: 1, LocalData1: 2, LocalData2: 3}}}}}}},
		{name: "one address of two leaves the aggregate", src: dns, entries: []Entry{{key("r1", "198.51.100.0/24"), tag}}},
	}
	tb := New()
	run(t, tb, steps, []string{"r1", "r2"})
	// After "the last contribution leaves", web still holds gold on r1.
	if diff := cmp.Diff([]string{"r1"}, tb.Advertised(web)); diff != "" {
		t.Errorf("Advertised(web) (-want +got):\n%s", diff)
	}
}

// pending reports whether anything waits to be sent to any of sessions.
func pending(tb *Table, sessions []string) bool {
	for k := range tb.pending {
		if slices.Contains(sessions, k.Session) {
			return true
		}
	}
	return false
}

func run(t *testing.T, tb *Table, steps []step, sessions []string) {
	t.Helper()
	for _, s := range steps {
		tb.Set(s.src, s.entries)
		got := tb.Changes(sessions)
		for _, c := range got {
			tb.Sent(c)
		}
		if diff := cmp.Diff(s.want, got, cmpOpts...); diff != "" {
			t.Errorf("%s: changes (-want +got):\n%s", s.name, diff)
		}
		if pending(tb, sessions) {
			t.Errorf("%s: routes still pending after every change was sent", s.name)
		}
	}
}

func TestTableKeepsFailedSendsPending(t *testing.T) {
	tb := New()
	tb.Set(web, []Entry{{key("r1", "198.51.100.1/32"), plain}})
	first := tb.Changes([]string{"r1"})
	if len(first) != 1 {
		t.Fatalf("changes = %v, want one", first)
	}
	// The send failed: nothing recorded. Advertised says nothing yet.
	if got := tb.Advertised(web); len(got) != 0 {
		t.Errorf("Advertised before any send = %v, want none", got)
	}
	again := tb.Changes([]string{"r1"})
	if diff := cmp.Diff(first, again, cmpOpts...); diff != "" {
		t.Errorf("the failed change is not sent again (-first +again):\n%s", diff)
	}
	tb.Sent(again[0])
	if diff := cmp.Diff([]string{"r1"}, tb.Advertised(web)); diff != "" {
		t.Errorf("Advertised (-want +got):\n%s", diff)
	}
}

func TestTableSessionComesAndGoes(t *testing.T) {
	tb := New()
	tb.Set(web, []Entry{{key("r1", "198.51.100.1/32"), plain}, {key("r2", "198.51.100.1/32"), plain}})
	// r2 is not running yet: only r1 is sent, r2 waits.
	for _, c := range tb.Changes([]string{"r1"}) {
		tb.Sent(c)
	}
	if !pending(tb, []string{"r2"}) {
		t.Error("r2's route is not pending")
	}
	for _, c := range tb.Changes([]string{"r1", "r2"}) {
		tb.Sent(c)
	}
	if len(tb.sent["r2"]) != 1 {
		t.Errorf("r2 holds %d routes, want 1", len(tb.sent["r2"]))
	}
	// r2 goes away (its routes with it) and comes back: sent again.
	tb.DropSession("r2")
	got := tb.Changes([]string{"r1", "r2"})
	if len(got) != 1 || got[0].Session != "r2" || len(got[0].Advertise) != 1 {
		t.Errorf("after r2 came back: %v, want its route sent again", got)
	}
}

func TestTableForgetsRoutesOfGoneSessions(t *testing.T) {
	tb := New()
	tb.Set(web, []Entry{{key("gone", "198.51.100.1/32"), plain}})
	tb.Set(web, nil)
	tb.Changes([]string{"r1"})
	if len(tb.pending) != 0 {
		t.Errorf("pending = %v, want nothing for a session that is not running and wants nothing", tb.pending)
	}
}
