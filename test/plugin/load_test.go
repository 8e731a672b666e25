package plugin

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/inspect"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestLoadRestoresWhileListing: Load hands the Services, as the API
// server lists them, to a Prerestore, and the replay starts from it when
// no claim was refused; when two Services show one address it does not,
// and the older keeps the address although its name lists last. Only
// Services of this test's loadBalancerClass are the replay's, so other
// tests' Services cannot refuse a claim here.
func TestLoadRestoresWhileListing(t *testing.T) {
	const class = "steadylb.io/load-test"
	ns := namespace(t, "load", nil)
	fixture.Pool(t, "load", ns, "203.0.113.200/29")
	ours := func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To(class) }
	older := metallbService(t, ns, "z-older", "203.0.113.201", ours)
	fixture.Later(t, older)
	metallbService(t, ns, "b-kept", "203.0.113.202", ours)
	metallbService(t, ns, "c-pending", "", ours)

	load := func() assign.Cluster {
		t.Helper()
		clients, err := inspect.Connect(testenv.Shared.Config)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := inspect.Load(context.Background(), clients, inspect.Source{Namespace: testenv.Namespace, LBClass: class})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	decided := func(c assign.Cluster, name string) []string {
		t.Helper()
		s, err := inspect.NewState(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := s.Replayed.Verdict(ipam.ServiceKey{Namespace: ns, Name: name})
		if !ok {
			t.Fatalf("no decision for %s", name)
		}
		var out []string
		for _, a := range v.Addrs {
			out = append(out, a.String())
		}
		return out
	}

	c := load()
	if !c.Prerestored.Ready(c.Services) {
		t.Fatal("no claim conflicts, yet the replay would not start from the restore made while listing")
	}
	if got := decided(c, "z-older"); !slices.Equal(got, []string{"203.0.113.201"}) {
		t.Errorf("z-older decided %v", got)
	}

	// An address outside every pool is refused whatever the order: the
	// restore made while listing still serves, and the Service loses it.
	metallbService(t, ns, "d-outside", "198.51.100.9", ours)
	c = load()
	if !c.Prerestored.Ready(c.Services) {
		t.Fatal("an address outside every pool kept the replay from the restore made while listing")
	}
	s, err := inspect.NewState(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Replayed.Verdict(ipam.ServiceKey{Namespace: ns, Name: "d-outside"}); v.Step != assign.StepLost || len(v.Refused) != 1 {
		t.Errorf("d-outside: step %v, refused %v; want lost, its address refused", v.Step, v.Refused)
	}

	metallbService(t, ns, "a-younger", "203.0.113.201", ours) // lists before z-older
	c = load()
	if c.Prerestored.Ready(c.Services) {
		t.Fatal("a-younger, listed first, took the address z-older shows, and the replay would start from that")
	}
	if got := decided(c, "z-older"); !slices.Equal(got, []string{"203.0.113.201"}) {
		t.Errorf("z-older, the older, decided %v; want the address both show", got)
	}
}
