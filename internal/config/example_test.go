package config_test

import (
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
)

func ExampleBuild() {
	cfg, err := config.Build(config.Snapshot{
		Pools: []v1beta1.IPAddressPool{
			{
				ObjectMeta: metav1.ObjectMeta{Name: "gold"},
				Spec: v1beta1.IPAddressPoolSpec{
					Addresses:         []string{"192.0.2.0/28", "2001:db8::10-2001:db8::1f"},
					ServiceAllocation: &v1beta1.ServiceAllocation{Namespaces: []string{"shop"}},
				},
			},
			{
				ObjectMeta: metav1.ObjectMeta{Name: "lead"},
				Spec:       v1beta1.IPAddressPoolSpec{Addresses: []string{"192.0.2.20-192.0.2.10"}},
			},
		},
	})
	fmt.Println(err)

	// The valid part is usable; MetalLB would refuse it all.
	gold, _ := cfg.PoolFor(netip.MustParseAddr("2001:db8::1a"))
	fmt.Println(gold.Name(), gold.HasIPv4(), gold.HasIPv6(), gold.AutoAssign())
	fmt.Println(gold.Admits("shop", nil, labels.Set{"app": "web"}), gold.Admits("blog", nil, nil))
	// Output:
	// IPAddressPool "lead": spec.addresses[0]: invalid range "192.0.2.20-192.0.2.10": start is after end
	// gold true true true
	// true false
}

func ExampleParseRange() {
	for _, s := range []string{"192.0.2.7/24", "192.0.2.10 - 192.0.2.20", "::ffff:192.0.2.1/128"} {
		r, err := config.ParseRange(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(r, r.Range, r.Prefix.IsValid())
	}
	// Output:
	// 192.0.2.0/24 192.0.2.0-192.0.2.255 true
	// 192.0.2.10-192.0.2.20 192.0.2.10-192.0.2.20 false
	// invalid CIDR "::ffff:192.0.2.1/128": "::ffff:192.0.2.1" is an IPv4-mapped IPv6 address: write 192.0.2.1
}
