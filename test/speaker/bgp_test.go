package speaker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgp"
	"github.com/steadylb/steadylb/internal/speaker/bgpstatus"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestBGPAdvertisesFromEveryEligibleNode: no election; every node whose
// peers and advertisements select it advertises, and stops when the
// Service, its address, its Local endpoints or the node's eligibility go.
func TestBGPAdvertisesFromEveryEligibleNode(t *testing.T) {
	l := newBGPLab(t, "a", "b", "c")
	l.labelNode("c", "rack", ptrTo("2"))
	pool := l.bgpPool("bgp", "198.51.100.96/28", "2001:db8:60::/124")
	r1 := l.bgpPeer("r1", 64500, "203.0.113.1", nil, nil)
	r2 := l.bgpPeer("r2", 64500, "203.0.113.2", map[string]string{"rack": "2"}, nil)
	l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})

	key := l.service("web", []string{"198.51.100.97", "2001:db8:60::7"}, []string{"a"})
	both := []string{"198.51.100.97/32", "2001:db8:60::7/128"}
	l.waitRoutes(r1, map[string][]string{"a": both, "b": both, "c": both})
	l.waitRoutes(r2, map[string][]string{"c": both})
	l.waitBGPStatuses(key, map[string][]string{"a": {r1}, "b": {r1}, "c": {r1, r2}})

	t.Run("shape of ServiceBGPStatus, event and metric", func(t *testing.T) {
		st := l.bgpStatuses(key)[l.node("c")]
		if st.Namespace != testenv.Namespace || !strings.HasPrefix(st.Name, bgpstatus.NamePrefix) || st.GenerateName != bgpstatus.NamePrefix {
			t.Errorf("object %s/%s (generateName %q), want generated %q... in %s", st.Namespace, st.Name, st.GenerateName, bgpstatus.NamePrefix, testenv.Namespace)
		}
		wantLabels := map[string]string{v1beta1.LabelNode: l.node("c"), v1beta1.LabelServiceName: key.Name, v1beta1.LabelServiceNamespace: key.Namespace}
		if diff := cmp.Diff(wantLabels, st.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		want := v1beta1.MetalLBServiceBGPStatus{Node: l.node("c"), ServiceName: key.Name, ServiceNamespace: key.Namespace, Peers: []string{r1, r2}}
		if diff := cmp.Diff(want, st.Status); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
		note := fmt.Sprintf("announcing from node %q with protocol %q", l.node("b"), "bgp")
		if e := l.waitEvent(key, "nodeAssigned", note); e.Type != "Normal" {
			t.Errorf("nodeAssigned event type %s, want Normal", e.Type)
		}
		series := map[string]string{"service": key.String(), "protocol": "bgp", "node": l.node("b"), "ip": "198.51.100.97"}
		if v, ok := l.speakers["b"].gauge("metallb_speaker_announced", series); !ok || v != 1 {
			t.Errorf("metallb_speaker_announced%v = %v (present %v), want 1", series, v, ok)
		}
	})

	t.Run("an address change withdraws the old prefix", func(t *testing.T) {
		l.showAddresses(key, "198.51.100.99")
		one := []string{"198.51.100.99/32"}
		l.waitRoutes(r1, map[string][]string{"a": one, "b": one, "c": one})
		l.waitRoutes(r2, map[string][]string{"c": one})
	})

	t.Run("an excluded node withdraws and deletes its object", func(t *testing.T) {
		l.exclude("b", true)
		one := []string{"198.51.100.99/32"}
		l.waitRoutes(r1, map[string][]string{"a": one, "c": one})
		l.waitBGPStatuses(key, map[string][]string{"a": {r1}, "c": {r1, r2}})
		l.exclude("b", false)
		l.waitRoutes(r1, map[string][]string{"a": one, "b": one, "c": one})
	})

	t.Run("a node that stops matching a peer loses that session", func(t *testing.T) {
		l.labelNode("c", "rack", nil)
		one := []string{"198.51.100.99/32"}
		l.waitRoutes(r2, map[string][]string{})
		fixture.WaitFor(t, "c to run r1 only", func() bool { return cmp.Equal(l.routers["c"].sessionNames(), []string{r1}) })
		l.waitBGPStatuses(key, map[string][]string{"a": {r1}, "b": {r1}, "c": {r1}})
		l.waitRoutes(r1, map[string][]string{"a": one, "b": one, "c": one})
	})

	t.Run("Local policy: only nodes with a serving endpoint", func(t *testing.T) {
		local := l.service("local", []string{"198.51.100.100"}, []string{"b"}, localPolicy)
		one, web := []string{"198.51.100.100/32", "198.51.100.99/32"}, []string{"198.51.100.99/32"}
		l.waitRoutes(r1, map[string][]string{"a": web, "b": one, "c": web})
		l.endpoints(local, ready(l.node("c"))...)
		l.waitRoutes(r1, map[string][]string{"a": web, "b": web, "c": one})
		l.waitBGPStatuses(local, map[string][]string{"c": {r1}})
		l.endpoints(local, endpoint{node: l.node("c")}) // not ready: nothing serves
		l.waitRoutes(r1, map[string][]string{"a": web, "b": web, "c": web})
		l.waitBGPStatuses(local, nil)
	})

	t.Run("a deleted Service is withdrawn everywhere", func(t *testing.T) {
		l.deleteService(key)
		l.waitRoutes(r1, map[string][]string{})
		l.waitBGPStatuses(key, nil)
		series := map[string]string{"service": key.String(), "protocol": "bgp"}
		fixture.WaitFor(t, "the metric series to go", func() bool {
			_, ok := l.speakers["a"].gauge("metallb_speaker_announced", series)
			return !ok
		})
	})
}

// TestBGPAttributesAndPeers: aggregation, localPref on iBGP only,
// communities (literal and alias) merged across advertisements, an
// advertisement's extras only to its listed peers, and a route shared by
// two Services that lives until the last one goes.
func TestBGPAttributesAndPeers(t *testing.T) {
	l := newBGPLab(t, "a")
	pool := l.bgpPool("agg", "198.51.100.112/28")
	ibgp := l.bgpPeer("in", 64500, "203.0.113.1", nil, nil)
	ebgp := l.bgpPeer("out", 64999, "203.0.113.2", nil, nil)
	create(t, &v1beta1.Community{ObjectMeta: metav1.ObjectMeta{Name: l.id + "-names", Namespace: testenv.Namespace},
		Spec: v1beta1.CommunitySpec{Communities: []v1beta1.CommunityAlias{{Name: l.id + "-edge", Value: "65000:300"}}}})
	// To every peer; localPref goes to the iBGP one only.
	l.bgpAdvertisement("agg", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}, AggregationLength: ptrTo[int32](28),
		LocalPref: 150, Communities: []string{"65000:100", l.id + "-edge"}})
	// Only to the iBGP peer: its large community must not reach the other.
	l.bgpAdvertisement("tag", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}, AggregationLength: ptrTo[int32](28),
		LocalPref: 150, Communities: []string{"large:65000:1:2"}, Peers: []string{ibgp}})

	first := l.service("first", []string{"198.51.100.113"}, nil)
	second := l.service("second", []string{"198.51.100.114"}, nil)
	agg := []string{"198.51.100.112/28"}
	l.waitRoutes(ibgp, map[string][]string{"a": agg})
	l.waitRoutes(ebgp, map[string][]string{"a": agg})
	std := []uint32{65000<<16 | 100, 65000<<16 | 300}
	large := []config.LargeCommunity{{GlobalAdministrator: 65000, LocalData1: 1, LocalData2: 2}}
	fixture.WaitFor(t, "the iBGP route's attributes", func() bool {
		in, _ := l.routers["a"].route(ibgp, "198.51.100.112/28")
		return in.LocalPref == 150 && cmp.Equal(in.Communities, std) && cmp.Equal(in.LargeCommunities, large)
	})
	if out, _ := l.routers["a"].route(ebgp, "198.51.100.112/28"); out.LocalPref != 0 || !cmp.Equal(out.Communities, std) || len(out.LargeCommunities) != 0 {
		t.Errorf("eBGP route %+v, want no localPref, communities 65000:100 65000:300, no large community", out)
	}
	l.waitBGPStatuses(first, map[string][]string{"a": {ibgp, ebgp}})

	l.deleteService(first)
	l.waitBGPStatuses(first, nil)
	if got := l.routers["a"].held(ibgp); !cmp.Equal(got, agg) {
		t.Errorf("after one of two Services left, %s holds %v, want the aggregate", ibgp, got)
	}
	l.deleteService(second)
	l.waitRoutes(ibgp, map[string][]string{})
	l.waitRoutes(ebgp, map[string][]string{})
}

// TestBGPBadInput: bad BGP objects are reported on the ConfigurationState
// with object and field, and harm no other peer or route.
func TestBGPBadInput(t *testing.T) {
	l := newBGPLab(t, "a")
	pool := l.bgpPool("bad", "198.51.100.128/28")
	good := l.bgpPeer("good", 64500, "203.0.113.1", nil, nil)
	locked := l.bgpPeer("locked", 64500, "203.0.113.2", nil, func(s *v1beta2.BGPPeerSpec) {
		s.PasswordSecret.Name = l.id + "-password"
	})
	l.bgpAdvertisement("ok", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	key := l.service("web", []string{"198.51.100.129"}, nil)
	one := []string{"198.51.100.129/32"}
	l.waitRoutes(good, map[string][]string{"a": one})

	waitState := func(want string) {
		t.Helper()
		fixture.WaitFor(t, fmt.Sprintf("ConfigurationState saying %q", want), func() bool {
			st, ok := l.configurationState("a")
			return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
		})
	}
	waitState(fmt.Sprintf(`BGPPeer %q: spec.passwordSecret.name: Secret %q does not exist`, locked, l.id+"-password"))
	if got := l.routers["a"].sessionNames(); !cmp.Equal(got, []string{good}) {
		t.Errorf("sessions %v, want only %s while %s is broken", got, good, locked)
	}
	resets := l.routers["a"].resetCount(good)

	t.Run("an unknown community alias", func(t *testing.T) {
		name := l.bgpAdvertisement("alias", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}, Communities: []string{l.id + "-nope"}})
		waitState(fmt.Sprintf(`BGPAdvertisement %q: spec.communities[0]: no Community object defines the alias %q`, name, l.id+"-nope"))
	})
	t.Run("aggregation shorter than the pool", func(t *testing.T) {
		name := l.bgpAdvertisement("wide", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}, AggregationLength: ptrTo[int32](24)})
		waitState(fmt.Sprintf(`BGPAdvertisement %q: spec.aggregationLength: /24 is wider than /28`, name))
	})
	t.Run("localPref for an eBGP peer", func(t *testing.T) {
		ext := l.bgpPeer("ext", 64999, "203.0.113.3", nil, nil)
		name := l.bgpAdvertisement("pref", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}, LocalPref: 10, Peers: []string{ext}})
		waitState(fmt.Sprintf(`BGPAdvertisement %q: spec.localPref: BGPPeer %q is an eBGP peer`, name, ext))
		l.waitRoutes(ext, map[string][]string{"a": one}) // the valid advertisement still goes to it
	})
	t.Run("an unknown BFD profile", func(t *testing.T) {
		name := l.bgpPeer("bfd", 64500, "203.0.113.4", nil, func(s *v1beta2.BGPPeerSpec) { s.BFDProfile = l.id + "-none" })
		waitState(fmt.Sprintf(`BGPPeer %q: spec.bfdProfile: BFDProfile %q does not exist`, name, l.id+"-none"))
	})

	t.Run("a session the Router refuses", func(t *testing.T) {
		name := l.bgpPeer("long", 64500, "203.0.113.5", nil, func(s *v1beta2.BGPPeerSpec) { s.Password = strings.Repeat("k", 81) })
		waitState(fmt.Sprintf(`BGPPeer %q: spec: invalid BGP session %q: password: longer than the 80 bytes TCP MD5 allows`, name, name))
	})

	l.settle()
	if got := l.routers["a"].held(good); !cmp.Equal(got, one) {
		t.Errorf("the good peer holds %v, want %v throughout", got, one)
	}
	if n := l.routers["a"].resetCount(good); n != resets {
		t.Errorf("the good session was reset %d times by other objects' errors", n-resets)
	}

	t.Run("the Secret appears: the locked peer runs and gets the routes", func(t *testing.T) {
		create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: l.id + "-password", Namespace: testenv.Namespace},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{corev1.BasicAuthPasswordKey: []byte("s3cret")}})
		l.waitRoutes(locked, map[string][]string{"a": one})
		l.waitBGPStatuses(key, map[string][]string{"a": {l.id + "-ext", good, locked}})
	})
}

// TestBGPStatusFollowsSessions: a ServiceBGPStatus lists the sessions
// that are established and hold every route of its Service; one that goes
// down leaves the list and returns with its session, and the object goes
// while no session is up. A step the Router retries is on the
// ConfigurationState while it fails.
func TestBGPStatusFollowsSessions(t *testing.T) {
	l := newBGPLab(t, "a")
	pool := l.bgpPool("follow", "198.51.100.224/28")
	r1 := l.bgpPeer("r1", 64500, "203.0.113.1", nil, nil)
	r2 := l.bgpPeer("r2", 64500, "203.0.113.2", nil, nil)
	l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	key := l.service("web", []string{"198.51.100.225"}, nil)
	l.waitBGPStatuses(key, map[string][]string{"a": {r1, r2}})
	r := l.routers["a"]

	r.setDown(r2, true)
	l.waitBGPStatuses(key, map[string][]string{"a": {r1}})
	r.setDown(r1, true)
	l.waitBGPStatuses(key, nil)
	r.setDown(r1, false)
	r.setDown(r2, false)
	l.waitBGPStatuses(key, map[string][]string{"a": {r1, r2}})

	r.setFaults(bgp.Fault{Session: r2, Field: "spec.bfdProfile", Err: "no route to 203.0.113.2"})
	want := fmt.Sprintf(`BGPPeer %q: spec.bfdProfile: failing, retried every 1s: no route to 203.0.113.2`, r2)
	fixture.WaitFor(t, "the fault on the ConfigurationState", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
	})
	r.setFaults()
	fixture.WaitFor(t, "the ConfigurationState clear again", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result != v1beta1.ConfigurationInvalid
	})
}

// TestBGPPeerInAVRF: a BGPPeer's vrf reaches the Router with its session,
// and changing it resets that session.
func TestBGPPeerInAVRF(t *testing.T) {
	l := newBGPLab(t, "a")
	pool := l.bgpPool("vrf", "198.51.100.240/28")
	red := l.bgpPeer("red", 64500, "203.0.113.1", nil, func(s *v1beta2.BGPPeerSpec) { s.VRFName = "red" })
	l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	key := l.service("web", []string{"198.51.100.241"}, nil)
	l.waitRoutes(red, map[string][]string{"a": {"198.51.100.241/32"}})
	l.waitBGPStatuses(key, map[string][]string{"a": {red}})
	r := l.routers["a"]
	if got := r.session(red).VRF; got != "red" {
		t.Errorf("the session's VRF is %q, want red", got)
	}
	resets := r.resetCount(red)
	edit(t, &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: red, Namespace: testenv.Namespace}}, func(p *v1beta2.BGPPeer) {
		p.Spec.VRFName = "blue"
	})
	fixture.WaitFor(t, "the session reset into VRF blue", func() bool { return r.session(red).VRF == "blue" && r.resetCount(red) == resets+1 })
	l.waitRoutes(red, map[string][]string{"a": {"198.51.100.241/32"}})
}

// TestBGPPeerChangeResetsOnlyThatSession: editing one BGPPeer resets its
// session alone; a failed Update is retried until the router has it.
func TestBGPPeerChangeResetsOnlyThatSession(t *testing.T) {
	l := newBGPLab(t, "a")
	pool := l.bgpPool("reset", "198.51.100.144/28")
	keep := l.bgpPeer("keep", 64500, "203.0.113.1", nil, nil)
	change := l.bgpPeer("change", 64500, "203.0.113.2", nil, nil)
	l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	l.service("web", []string{"198.51.100.145"}, nil)
	one := []string{"198.51.100.145/32"}
	l.waitRoutes(keep, map[string][]string{"a": one})
	l.waitRoutes(change, map[string][]string{"a": one})
	r := l.routers["a"]
	keepResets, changeResets := r.resetCount(keep), r.resetCount(change)

	edit(t, &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: change, Namespace: testenv.Namespace}}, func(p *v1beta2.BGPPeer) {
		p.Spec.HoldTime = &metav1.Duration{Duration: 30 * time.Second}
	})
	fixture.WaitFor(t, "the changed session to be reset", func() bool { return r.resetCount(change) == changeResets+1 })
	if n := r.resetCount(keep); n != keepResets {
		t.Errorf("the unchanged session was reset %d times", n-keepResets)
	}
	l.waitRoutes(change, map[string][]string{"a": one})

	r.setFailing(keep, true)
	two := l.service("two", []string{"198.51.100.146"}, nil)
	both := []string{"198.51.100.145/32", "198.51.100.146/32"}
	l.waitRoutes(change, map[string][]string{"a": both})
	l.waitBGPStatuses(two, map[string][]string{"a": {change}})
	r.setFailing(keep, false)
	l.waitRoutes(keep, map[string][]string{"a": both})
	l.waitBGPStatuses(two, map[string][]string{"a": {change, keep}})
}

// TestBGPOneChangeSendsOnlyItsPrefix (invariant 10): with many Services
// advertised, moving one Service's Local endpoint makes each node send
// one Update with that Service's one prefix, or nothing, never the table.
func TestBGPOneChangeSendsOnlyItsPrefix(t *testing.T) {
	const services = 40
	l := newBGPLab(t, "a", "b")
	pool := l.bgpPool("many", "198.51.100.160/27", "198.51.100.192/28")
	peer := l.bgpPeer("r", 64500, "203.0.113.1", nil, nil)
	l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	var all []string
	for i := range services {
		addr := fmt.Sprintf("198.51.100.%d", 160+i)
		l.service(fmt.Sprintf("web-%d", i), []string{addr}, nil)
		all = append(all, addr+"/32")
	}
	moving := l.service("moving", []string{"198.51.100.201"}, []string{"a"}, localPolicy)
	withMoving := append(slices.Clone(all), "198.51.100.201/32")
	slices.Sort(all)
	slices.Sort(withMoving)
	l.waitRoutes(peer, map[string][]string{"a": withMoving, "b": all})
	l.waitBGPStatuses(moving, map[string][]string{"a": {peer}})
	before := map[string][2]int{}
	for _, n := range []string{"a", "b"} {
		u, p := l.routers[n].counts()
		before[n] = [2]int{u, p}
	}

	l.endpoints(moving, ready(l.node("b"))...)
	l.waitRoutes(peer, map[string][]string{"a": all, "b": withMoving})
	l.settle()
	for _, n := range []string{"a", "b"} {
		u, p := l.routers[n].counts()
		du, dp := u-before[n][0], p-before[n][1]
		t.Logf("node %s: %d Update calls carrying %d prefixes for the change", n, du, dp)
		if du != 1 || dp != 1 {
			t.Errorf("node %s sent %d Updates with %d prefixes for one endpoint change, want 1 with 1", n, du, dp)
		}
	}
}

// TestBGPStaleObjectsFromAnEarlierRun: ServiceBGPStatus objects this node
// left behind are adopted: one per advertised Service is kept and brought
// up to date, duplicates and those of Services it no longer advertises
// are deleted.
func TestBGPStaleObjectsFromAnEarlierRun(t *testing.T) {
	l := prepareBGPLab(t, "a")
	pool := l.bgpPool("stale", "198.51.100.176/28")
	peer := l.bgpPeer("r", 64500, "203.0.113.1", nil, nil)
	l.bgpAdvertisement("all", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	kept := l.service("web", []string{"198.51.100.177"}, nil)
	idle := l.service("idle", []string{"198.51.100.178"}, nil)
	l.endpoints(idle) // no endpoints: not advertised
	leftover := func(svc types.NamespacedName) *v1beta1.ServiceBGPStatus {
		st := &v1beta1.ServiceBGPStatus{ObjectMeta: metav1.ObjectMeta{GenerateName: bgpstatus.NamePrefix, Namespace: testenv.Namespace,
			Labels: map[string]string{v1beta1.LabelNode: l.node("a"), v1beta1.LabelServiceName: svc.Name, v1beta1.LabelServiceNamespace: svc.Namespace}}}
		create(t, st)
		return st
	}
	keep := leftover(kept)
	gone := leftover(types.NamespacedName{Namespace: l.ns, Name: "deleted-meanwhile"})
	unused := leftover(idle)
	duplicate := leftover(kept)

	l.startAll()
	l.waitRoutes(peer, map[string][]string{"a": {"198.51.100.177/32"}})
	fixture.WaitFor(t, "the stale objects and one of the duplicates to be deleted", func() bool {
		return !exists(gone) && !exists(unused) && exists(keep) != exists(duplicate)
	})
	l.waitBGPStatuses(kept, map[string][]string{"a": {peer}})
	if st := l.bgpStatuses(kept)[l.node("a")]; st.Name != keep.Name && st.Name != duplicate.Name {
		t.Errorf("the object of the advertised Service is %s, want one of the adopted ones", st.Name)
	}
}
