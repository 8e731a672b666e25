package bgpdecide

import (
	"fmt"
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/facts"
	"github.com/steadylb/steadylb/internal/speaker/facts/factstest"
	"github.com/steadylb/steadylb/internal/speaker/routes"
)

// BenchmarkBGPServiceChange measures the speaker core's part of one
// Service change with 10 to 100,000 Services advertised: the decision for
// the Service, the route table update, and the changes to send, which
// are recorded as sent. The Service's address moves between two
// addresses, so every operation withdraws one prefix and advertises
// another on each of two sessions. updates/op and prefixes/op are what
// would go to Router.Update; they, and the time, must not grow with the
// number of Services (invariant 10). test/speaker's benchmark of the same
// name measures it end to end on the API server.
func BenchmarkBGPServiceChange(b *testing.B) {
	cfg := bgpConfig(b, bgpAdvertisement("all", func(s *v1beta1.BGPAdvertisementSpec) {
		s.Peers = []string{"r1", "x"}
		s.Communities = []string{"65000:1"}
	}))
	self := &facts.Node{Name: "a", Labels: labels.Set{"rack": "1"}}
	model := NewModel(cfg, self)
	for _, n := range []int{10, 10000, 100000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			table := routes.New()
			sessions := model.Names
			addr := netip.MustParseAddr("2001:db8:1::")
			for i := range n {
				addr = addr.Next()
				svc := factstest.Service(fmt.Sprintf("web-%d", i), "b")
				table.Set(svc.Key, Decide(svc, []netip.Addr{addr}, cfg, model, self).Entries)
			}
			held := 0 // routes r1 holds, from what was sent to it
			send := func(c routes.Change) {
				if c.Session == "r1" {
					held += len(c.Advertise) - len(c.Withdraw)
				}
				table.Sent(c)
			}
			for _, c := range table.Changes(sessions) {
				send(c)
			}
			if held != n {
				b.Fatalf("r1 holds %d routes, want %d", held, n)
			}
			moving := factstest.Service("moving", "b")
			addrs := [2]netip.Addr{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")}
			var updates, prefixes int
			i := 0
			for b.Loop() {
				i++
				d := Decide(moving, addrs[i%2:i%2+1], cfg, model, self)
				table.Set(moving.Key, d.Entries)
				for _, c := range table.Changes(sessions) {
					updates++
					prefixes += len(c.Advertise) + len(c.Withdraw)
					send(c)
				}
			}
			if held != n+1 {
				b.Fatalf("r1 holds %d routes, want %d", held, n+1)
			}
			b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
			b.ReportMetric(float64(prefixes)/float64(b.N), "prefixes/op")
		})
	}
}
