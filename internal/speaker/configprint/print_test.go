package configprint

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
)

func pool(name string, change ...func(*v1beta1.IPAddressPool)) v1beta1.IPAddressPool {
	p := v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pool-" + name), Generation: 1},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.0/24"}}}
	for _, c := range change {
		c(&p)
	}
	return p
}

func TestObjects(t *testing.T) {
	base := config.Snapshot{Pools: []v1beta1.IPAddressPool{pool("a"), pool("b")},
		L2Advertisements: []v1beta1.L2Advertisement{{ObjectMeta: metav1.ObjectMeta{Name: "all", UID: "uid-ad", Generation: 1}}}}
	tests := []struct {
		name string
		snap config.Snapshot
		same bool
	}{
		{name: "another order", same: true, snap: config.Snapshot{Pools: []v1beta1.IPAddressPool{pool("b"), pool("a")},
			L2Advertisements: base.L2Advertisements}},
		{name: "a status change", same: true, snap: config.Snapshot{L2Advertisements: base.L2Advertisements,
			Pools: []v1beta1.IPAddressPool{pool("a", func(p *v1beta1.IPAddressPool) { p.Status.AvailableIPv4 = 7 }), pool("b")}}},
		{name: "a spec change (new generation)", snap: config.Snapshot{L2Advertisements: base.L2Advertisements,
			Pools: []v1beta1.IPAddressPool{pool("a", func(p *v1beta1.IPAddressPool) { p.Generation = 2 }), pool("b")}}},
		{name: "a label change", snap: config.Snapshot{L2Advertisements: base.L2Advertisements,
			Pools: []v1beta1.IPAddressPool{pool("a", func(p *v1beta1.IPAddressPool) { p.Labels = map[string]string{"tier": "gold"} }), pool("b")}}},
		{name: "an object deleted and created again (new UID)", snap: config.Snapshot{L2Advertisements: base.L2Advertisements,
			Pools: []v1beta1.IPAddressPool{pool("a", func(p *v1beta1.IPAddressPool) { p.UID = "other" }), pool("b")}}},
		{name: "an object gone", snap: config.Snapshot{L2Advertisements: base.L2Advertisements,
			Pools: []v1beta1.IPAddressPool{pool("a")}}},
		{name: "another kind of the same name and UID", snap: config.Snapshot{Pools: base.Pools,
			BGPAdvertisements: []v1beta1.BGPAdvertisement{{ObjectMeta: metav1.ObjectMeta{Name: "all", UID: "uid-ad", Generation: 1}}}}},
	}
	want := Objects(base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Objects(tt.snap)
			if (got == want) != tt.same {
				t.Errorf("same fingerprint: got %v, want %v\nbase:\n%s\nthis:\n%s", got == want, tt.same, want, got)
			}
		})
	}
}
