package cluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/testenv"
)

// Steadylb is steadylb running on the cluster from its manifests: the
// Deployment's replicas and a speaker on every node.
type Steadylb struct {
	Controllers []*Controller
	// Speakers by node name.
	Speakers map[string]*Speaker
}

// StartSteadylb starts the controller replicas (as many as the Deployment
// asks for) and a speaker on every node, and waits until the controllers
// run (a leader is ready only once a pool exists) and the speakers are
// ready. They are killed when tb ends.
func (c *Cluster) StartSteadylb(tb testing.TB) *Steadylb {
	tb.Helper()
	d, err := c.Manifests.Deployment("controller")
	if err != nil {
		tb.Fatal(err)
	}
	replicas := 1
	if d.Spec.Replicas != nil {
		replicas = int(*d.Spec.Replicas)
	}
	s := &Steadylb{Speakers: map[string]*Speaker{}}
	for range replicas {
		s.Controllers = append(s.Controllers, c.StartController(tb))
	}
	for _, n := range c.Lab.Nodes {
		s.Speakers[n.Name] = c.StartSpeaker(tb, n)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	for _, ctl := range s.Controllers {
		if err := ctl.WaitLive(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	for _, sp := range s.Speakers {
		if err := sp.WaitReady(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// L2Pool creates a pool serving only namespace ns with an L2Advertisement
// for it, both deleted when tb ends.
func L2Pool(tb testing.TB, name, ns string, addresses ...string) {
	tb.Helper()
	fixture.Pool(tb, name, ns, addresses...)
	ad := &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.Namespace},
		Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{name}}}
	if err := testenv.Shared.Client.Create(tb.Context(), ad); err != nil {
		tb.Fatalf("cluster: create L2Advertisement %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = testenv.Shared.Client.Delete(context.Background(), ad) })
}

// WaitAddress waits until the Service shows an address and returns it.
func WaitAddress(tb testing.TB, svc *corev1.Service) netip.Addr {
	tb.Helper()
	var addr netip.Addr
	fixture.WaitFor(tb, "an address for "+svc.Name, func() bool {
		var got corev1.Service
		if err := testenv.Shared.Client.Get(tb.Context(), client.ObjectKeyFromObject(svc), &got); err != nil {
			return false
		}
		for _, in := range got.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(in.IP); err == nil {
				addr = a
				return true
			}
		}
		return false
	})
	return addr
}

// Announcer returns the node whose ServiceL2Status says it announces the
// Service, or "" when none or several do.
func Announcer(ctx context.Context, svc types.NamespacedName) (string, error) {
	var list v1beta1.ServiceL2StatusList
	if err := testenv.Shared.Client.List(ctx, &list, client.InNamespace(testenv.Namespace), client.MatchingLabels{
		v1beta1.LabelServiceName: svc.Name, v1beta1.LabelServiceNamespace: svc.Namespace}); err != nil {
		return "", fmt.Errorf("cluster: list ServiceL2Status: %w", err)
	}
	if len(list.Items) != 1 {
		return "", nil
	}
	return list.Items[0].Status.Node, nil
}

// URL is the Service's address as the load fetches it.
func URL(addr netip.Addr) string {
	return fmt.Sprintf("http://%s:%d/", addr, ServicePort)
}

// WaitProxied waits until kube-proxy on every node has its rules for the
// Service port of addr. A request sent before then (the speaker may
// announce the address first: both react to the same status write) is
// forwarded by the node unchanged, and conntrack keeps that untranslated
// entry for 120 s after the SYN and each of its retries: the request
// never gets through, and neither does a later one from the same client
// port, which the load reuses within that time.
func (c *Cluster) WaitProxied(tb testing.TB, addr netip.Addr) {
	tb.Helper()
	rule := fmt.Sprintf("%s . tcp . %d", addr, ServicePort)
	for _, n := range c.Lab.Nodes {
		fixture.WaitFor(tb, "kube-proxy's rules for "+addr.String()+" on "+n.Name, func() bool {
			rules, err := c.Ruleset(n)
			return err == nil && strings.Contains(rules, rule)
		})
	}
}

// Node returns the lab node called name.
func (c *Cluster) Node(name string) *lab.Node { return c.Lab.Node(name) }

// Loadgen is the built test/loadgen binary.
func (c *Cluster) Loadgen() string { return c.bins.Loadgen }

// ClientNeighbor is the MAC the client's neighbour table holds for addr:
// the node its requests to addr go to.
func (c *Cluster) ClientNeighbor(addr netip.Addr) (net.HardwareAddr, error) {
	out, err := c.Lab.Client.NS.Exec("neigh", "show", addr.String(), "dev", lab.SegmentA)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "lladdr" {
			return net.ParseMAC(f[i+1])
		}
	}
	return nil, fmt.Errorf("cluster: the client has no neighbour entry for %s: %q", addr, out)
}

// LeaseName is the controller's leader election Lease (--leader-election-id
// default) in the configuration namespace.
const LeaseName = "steadylb-controller"

// Leader is the Pod name of the controller replica holding the Lease (its
// host name, the first part of the holder identity), or "".
func Leader(ctx context.Context) string {
	var lease coordinationv1.Lease
	key := client.ObjectKey{Namespace: testenv.Namespace, Name: LeaseName}
	if err := testenv.Shared.Client.Get(ctx, key, &lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	host, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return host
}
