package crds

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/testenv"
)

const roundTripNamespace = "roundtrip"

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: roundTripNamespace, Labels: map[string]string{"test": "roundtrip"}}
}

func selector(k, v string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

// TestRoundTrip writes one fully populated object of every kind and reads it
// back: every field survives, so no field is pruned by a schema mismatch.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := testenv.Shared.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: roundTripNamespace}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	tests := []struct {
		name  string
		obj   client.Object
		empty client.Object
		// spec picks what must survive the round trip.
		spec func(client.Object) any
	}{
		{
			name: "IPAddressPool",
			obj: &v1beta1.IPAddressPool{ObjectMeta: meta("pool"), Spec: v1beta1.IPAddressPoolSpec{
				Addresses:     []string{"192.0.2.0/24", "198.51.100.1-198.51.100.9", "2001:db8::/64"},
				AutoAssign:    ptr.To(false),
				AvoidBuggyIPs: true,
				ServiceAllocation: &v1beta1.ServiceAllocation{
					Priority: 5, Namespaces: []string{"a", "b"},
					NamespaceSelectors: []metav1.LabelSelector{selector("team", "x")},
					ServiceSelectors:   []metav1.LabelSelector{selector("app", "y")},
				},
			}},
			empty: &v1beta1.IPAddressPool{},
			spec:  func(o client.Object) any { return o.(*v1beta1.IPAddressPool).Spec },
		},
		{
			name: "L2Advertisement",
			obj: &v1beta1.L2Advertisement{ObjectMeta: meta("l2"), Spec: v1beta1.L2AdvertisementSpec{
				IPAddressPools:         []string{"pool"},
				IPAddressPoolSelectors: []metav1.LabelSelector{selector("tier", "a")},
				NodeSelectors:          []metav1.LabelSelector{selector("node", "a")},
				Interfaces:             []string{"eth0", "eth1"},
				ServiceSelectors:       []metav1.LabelSelector{selector("app", "a")},
				PreferredNodeSelectors: []v1beta1.PreferredNodeSelector{{Weight: 100, Preference: selector("zone", "a")}},
			}},
			empty: &v1beta1.L2Advertisement{},
			spec:  func(o client.Object) any { return o.(*v1beta1.L2Advertisement).Spec },
		},
		{
			name: "BGPAdvertisement",
			obj: &v1beta1.BGPAdvertisement{ObjectMeta: meta("bgp"), Spec: v1beta1.BGPAdvertisementSpec{
				AggregationLength: ptr.To[int32](24), AggregationLengthV6: ptr.To[int32](64),
				LocalPref: 200, Communities: []string{"64512:1", "large:1:2:3", "alias"},
				IPAddressPools:         []string{"pool"},
				IPAddressPoolSelectors: []metav1.LabelSelector{selector("tier", "a")},
				NodeSelectors:          []metav1.LabelSelector{selector("node", "a")},
				Peers:                  []string{"peer"},
				ServiceSelectors:       []metav1.LabelSelector{selector("app", "a")},
			}},
			empty: &v1beta1.BGPAdvertisement{},
			spec:  func(o client.Object) any { return o.(*v1beta1.BGPAdvertisement).Spec },
		},
		{
			name: "BGPPeer v1beta2",
			obj: &v1beta2.BGPPeer{ObjectMeta: meta("peer"), Spec: v1beta2.BGPPeerSpec{
				MyASN: 64512, ASN: 64513, LocalASN: 64600, Address: "192.0.2.254", SrcAddress: "192.0.2.1",
				Port: 1179, HoldTime: &metav1.Duration{Duration: 9 * time.Second},
				KeepaliveTime: &metav1.Duration{Duration: 3 * time.Second},
				ConnectTime:   &metav1.Duration{Duration: 10 * time.Second},
				RouterID:      "192.0.2.1", NodeSelectors: []metav1.LabelSelector{selector("rack", "1")},
				PasswordSecret: corev1.SecretReference{Name: "pw", Namespace: roundTripNamespace},
				BFDProfile:     "fast", EnableGracefulRestart: true, EBGPMultiHop: true, VRFName: "red",
				DisableMP: true, DualStackAddressFamily: true,
			}},
			empty: &v1beta2.BGPPeer{},
			spec:  func(o client.Object) any { return o.(*v1beta2.BGPPeer).Spec },
		},
		{
			name: "BFDProfile",
			obj: &v1beta1.BFDProfile{ObjectMeta: meta("bfd"), Spec: v1beta1.BFDProfileSpec{
				ReceiveInterval: ptr.To[uint32](10), TransmitInterval: ptr.To[uint32](60000),
				DetectMultiplier: ptr.To[uint32](255), EchoInterval: ptr.To[uint32](50),
				EchoMode: ptr.To(true), PassiveMode: ptr.To(false), MinimumTTL: ptr.To[uint32](1),
			}},
			empty: &v1beta1.BFDProfile{},
			spec:  func(o client.Object) any { return o.(*v1beta1.BFDProfile).Spec },
		},
		{
			name: "Community",
			obj: &v1beta1.Community{ObjectMeta: meta("community"), Spec: v1beta1.CommunitySpec{
				Communities: []v1beta1.CommunityAlias{{Name: "a", Value: "1:2"}, {Name: "b", Value: "large:1:2:3"}},
			}},
			empty: &v1beta1.Community{},
			spec:  func(o client.Object) any { return o.(*v1beta1.Community).Spec },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.spec(tt.obj.DeepCopyObject().(client.Object))
			if err := c.Create(ctx, tt.obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(tt.obj), tt.empty); err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(want, tt.spec(tt.empty)); diff != "" {
				t.Errorf("spec changed on the round trip (-sent +read):\n%s", diff)
			}
		})
	}
}

// TestStatusRoundTrip writes the status of the status-only kinds through the
// status subresource and reads it back.
func TestStatusRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := testenv.Shared.Client
	ns := testenv.Namespace

	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "status-pool", Namespace: ns},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"203.0.113.64/26"}}}
	poolStatus := v1beta1.IPAddressPoolStatus{AssignedIPv4: 3, AvailableIPv4: 61, AvailableIPv6: 1 << 62}

	l2 := &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{Name: "l2-status", Namespace: ns}}
	l2Status := v1beta1.MetalLBServiceL2Status{Node: "node-a", ServiceName: "web", ServiceNamespace: "shop",
		Interfaces: []v1beta1.InterfaceInfo{{Name: "eth0"}}}

	bgp := &v1beta1.ServiceBGPStatus{ObjectMeta: metav1.ObjectMeta{Name: "bgp-status", Namespace: ns}}
	bgpStatus := v1beta1.MetalLBServiceBGPStatus{Node: "node-a", ServiceName: "web", ServiceNamespace: "shop",
		Peers: []string{"peer-a", "peer-b"}}

	state := &v1beta1.ConfigurationState{ObjectMeta: metav1.ObjectMeta{Name: "speaker-node-a", Namespace: ns}}
	stateStatus := v1beta1.ConfigurationStateStatus{Result: v1beta1.ConfigurationInvalid,
		ErrorSummary: `IPAddressPool "a": spec.addresses[0]: invalid CIDR "x"`,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Invalid",
			Message: "bad pool", LastTransitionTime: metav1.Now().Rfc3339Copy()}}}

	tests := []struct {
		name      string
		obj       client.Object
		setStatus func()
		status    func() any
		want      any
	}{
		{"IPAddressPool", pool, func() { pool.Status = poolStatus }, func() any { return pool.Status }, poolStatus},
		{"ServiceL2Status", l2, func() { l2.Status = l2Status }, func() any { return l2.Status }, l2Status},
		{"ServiceBGPStatus", bgp, func() { bgp.Status = bgpStatus }, func() any { return bgp.Status }, bgpStatus},
		{"ConfigurationState", state, func() { state.Status = stateStatus }, func() any { return state.Status }, stateStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Create(ctx, tt.obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			tt.setStatus()
			if err := c.Status().Update(ctx, tt.obj); err != nil {
				t.Fatalf("update status: %v", err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(tt.obj), tt.obj); err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.status()); diff != "" {
				t.Errorf("status changed on the round trip (-sent +read):\n%s", diff)
			}
		})
	}
}

// TestDefaults checks the defaults MetalLB users rely on when they leave a
// field out.
func TestDefaults(t *testing.T) {
	ctx := context.Background()
	c := testenv.Shared.Client
	ns := testenv.Namespace

	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"203.0.113.128/28"}}}
	adv := &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns}}
	peer := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: v1beta2.BGPPeerSpec{MyASN: 64512, ASN: 64513, Address: "192.0.2.9"}}
	for _, o := range []client.Object{pool, adv, peer} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	if got := pool.Spec.AutoAssign; got == nil || !*got {
		t.Errorf("IPAddressPool autoAssign = %v, want true", got)
	}
	if got := adv.Spec.AggregationLength; got == nil || *got != 32 {
		t.Errorf("BGPAdvertisement aggregationLength = %v, want 32", got)
	}
	if got := adv.Spec.AggregationLengthV6; got == nil || *got != 128 {
		t.Errorf("BGPAdvertisement aggregationLengthV6 = %v, want 128", got)
	}
	if got := peer.Spec.Port; got != 179 {
		t.Errorf("BGPPeer peerPort = %d, want 179", got)
	}
}
