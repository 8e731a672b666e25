package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/cluster"
	"github.com/steadylb/steadylb/test/fixture"
)

// TestIPMode: with ipMode VIP (the default) kube-proxy takes the
// LoadBalancer address over on every node (its nftables rules send it
// to the Service's endpoints), so a request to the address is answered.
// With steadylb.io/ip-mode: Proxy it leaves the address alone on every
// node, as KEP-1860 says, for a load balancer that forwards to the
// nodes' ports; the address is still announced, but nothing on the
// nodes answers it, while the Service's node port still does.
func TestIPMode(t *testing.T) {
	c := cluster.Require(t)
	c.StartSteadylb(t)
	ns := fixture.Namespace(t)
	cluster.L2Pool(t, "mode-"+ns, ns, labAddress(2), labAddress(3))
	vipApp, proxyApp := c.NewApp(t, ns, "vip"), c.NewApp(t, ns, "proxy")
	vipApp.AddPod(t, c.Lab.Nodes[0])
	proxyApp.AddPod(t, c.Lab.Nodes[0])
	vipSvc := vipApp.Service(t)
	proxySvc := proxyApp.Service(t, cluster.Annotate("steadylb.io/ip-mode", "Proxy"))
	vip, proxied := cluster.WaitAddress(t, vipSvc), cluster.WaitAddress(t, proxySvc)

	fixture.WaitFor(t, "the Proxy Service's ipMode", func() bool {
		var s corev1.Service
		if err := c.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(proxySvc), &s); err != nil {
			return false
		}
		in := s.Status.LoadBalancer.Ingress
		return len(in) == 1 && in[0].IPMode != nil && *in[0].IPMode == corev1.LoadBalancerIPModeProxy
	})
	c.WaitProxied(t, vip)
	for _, n := range c.Lab.Nodes {
		rules, err := c.Ruleset(n)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(rules, proxied.String()) {
			t.Errorf("kube-proxy on %s has rules for %s, whose ipMode is Proxy", n.Name, proxied)
		}
	}
	answered(t, c, cluster.URL(vip))
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := c.Lab.Client.Get(ctx, cluster.URL(proxied)); err == nil {
		t.Errorf("a request to %s, whose ipMode is Proxy, was answered on a node", proxied)
	}
	var s corev1.Service
	if err := c.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(proxySvc), &s); err != nil {
		t.Fatal(err)
	}
	answered(t, c, fmt.Sprintf("http://%s:%d/", c.Lab.Nodes[1].IPv4, s.Spec.Ports[0].NodePort))
}
