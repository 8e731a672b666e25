package crds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/testenv"
)

func seconds(s float64) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(s * float64(time.Second))}
}

// peer returns a valid eBGP peer changed by the given edits.
func peer(edits ...func(*v1beta2.BGPPeerSpec)) *v1beta2.BGPPeer {
	p := &v1beta2.BGPPeer{Spec: v1beta2.BGPPeerSpec{MyASN: 64512, ASN: 64513, Address: "192.0.2.254"}}
	for _, edit := range edits {
		edit(&p.Spec)
	}
	return p
}

func bfd(edit func(*v1beta1.BFDProfileSpec)) *v1beta1.BFDProfile {
	p := &v1beta1.BFDProfile{}
	edit(&p.Spec)
	return p
}

func bgpAdvertisement(v4, v6 int32) *v1beta1.BGPAdvertisement {
	return &v1beta1.BGPAdvertisement{Spec: v1beta1.BGPAdvertisementSpec{
		AggregationLength: ptr.To(v4), AggregationLengthV6: ptr.To(v6)}}
}

func l2Weight(w int32) *v1beta1.L2Advertisement {
	return &v1beta1.L2Advertisement{Spec: v1beta1.L2AdvertisementSpec{
		PreferredNodeSelectors: []v1beta1.PreferredNodeSelector{{Weight: w, Preference: selector("zone", "a")}}}}
}

// TestCreateRejected shows that the API server itself refuses each kind of
// bad object, with a message that names the problem.
func TestCreateRejected(t *testing.T) {
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"peerASN and dynamicASN", peer(func(s *v1beta2.BGPPeerSpec) { s.DynamicASN = v1beta2.ExternalASNMode }),
			"exactly one of peerASN and dynamicASN must be set"},
		{"neither peerASN nor dynamicASN", peer(func(s *v1beta2.BGPPeerSpec) { s.ASN = 0 }),
			"exactly one of peerASN and dynamicASN must be set"},
		{"unknown dynamicASN", peer(func(s *v1beta2.BGPPeerSpec) { s.ASN, s.DynamicASN = 0, "sideways" }),
			`spec.dynamicASN: Unsupported value: "sideways"`},
		{"peerAddress and interface", peer(func(s *v1beta2.BGPPeerSpec) { s.Interface = "eth0" }),
			"exactly one of peerAddress and interface must be set"},
		{"neither peerAddress nor interface", peer(func(s *v1beta2.BGPPeerSpec) { s.Address = "" }),
			"exactly one of peerAddress and interface must be set"},
		{"holdTime under 3s", peer(func(s *v1beta2.BGPPeerSpec) { s.HoldTime = seconds(2) }),
			"spec.holdTime: Invalid value: holdTime must be 0 or at least 3s"},
		{"keepalive equal to hold", peer(func(s *v1beta2.BGPPeerSpec) { s.HoldTime, s.KeepaliveTime = seconds(30), seconds(30) }),
			"keepaliveTime must be shorter than holdTime"},
		{"ebgpMultiHop on iBGP", peer(func(s *v1beta2.BGPPeerSpec) { s.ASN, s.EBGPMultiHop = s.MyASN, true }),
			"ebgpMultiHop cannot be set for an iBGP session"},
		{"ebgpMultiHop on dynamic internal", peer(func(s *v1beta2.BGPPeerSpec) {
			s.ASN, s.DynamicASN, s.EBGPMultiHop = 0, v1beta2.InternalASNMode, true
		}), "ebgpMultiHop cannot be set for an iBGP session"},
		{"connectTime zero", peer(func(s *v1beta2.BGPPeerSpec) { s.ConnectTime = seconds(0) }),
			"connectTime must be between 1s and 65535s"},
		{"connectTime too long", peer(func(s *v1beta2.BGPPeerSpec) { s.ConnectTime = seconds(65536) }),
			"connectTime must be between 1s and 65535s"},
		{"connectTime fractional", peer(func(s *v1beta2.BGPPeerSpec) { s.ConnectTime = seconds(1.5) }),
			"connectTime must be a whole number of seconds"},
		{"password and passwordSecret", peer(func(s *v1beta2.BGPPeerSpec) {
			s.Password, s.PasswordSecret.Name = "pw", "secret"
		}), "password and passwordSecret are mutually exclusive"},
		{"peerPort too high", peer(func(s *v1beta2.BGPPeerSpec) { s.Port = 16385 }),
			"spec.peerPort: Invalid value: 16385: spec.peerPort in body should be less than or equal to 16384"},
		{"v1beta1 holdTime under 3s", &v1beta1.BGPPeer{Spec: v1beta1.BGPPeerSpec{
			MyASN: 1, ASN: 2, Address: "192.0.2.1", HoldTime: seconds(1)}},
			"holdTime must be 0 or at least 3s"},
		{"v1beta1 ebgpMultiHop on iBGP", &v1beta1.BGPPeer{Spec: v1beta1.BGPPeerSpec{
			MyASN: 1, ASN: 1, Address: "192.0.2.1", EBGPMultiHop: true}},
			"ebgpMultiHop cannot be set for an iBGP session"},
		{"BFD receiveInterval under 10ms", bfd(func(s *v1beta1.BFDProfileSpec) { s.ReceiveInterval = ptr.To[uint32](9) }),
			"spec.receiveInterval in body should be greater than or equal to 10"},
		{"BFD transmitInterval over 60000ms", bfd(func(s *v1beta1.BFDProfileSpec) { s.TransmitInterval = ptr.To[uint32](60001) }),
			"spec.transmitInterval in body should be less than or equal to 60000"},
		{"BFD echoInterval under 10ms", bfd(func(s *v1beta1.BFDProfileSpec) { s.EchoInterval = ptr.To[uint32](1) }),
			"spec.echoInterval in body should be greater than or equal to 10"},
		{"BFD detectMultiplier 1", bfd(func(s *v1beta1.BFDProfileSpec) { s.DetectMultiplier = ptr.To[uint32](1) }),
			"spec.detectMultiplier in body should be greater than or equal to 2"},
		{"BFD minimumTtl 255", bfd(func(s *v1beta1.BFDProfileSpec) { s.MinimumTTL = ptr.To[uint32](255) }),
			"spec.minimumTtl in body should be less than or equal to 254"},
		{"aggregationLength 0", bgpAdvertisement(0, 128),
			"spec.aggregationLength in body should be greater than or equal to 1"},
		{"aggregationLength 33", bgpAdvertisement(33, 128),
			"spec.aggregationLength in body should be less than or equal to 32"},
		{"aggregationLengthV6 129", bgpAdvertisement(32, 129),
			"spec.aggregationLengthV6 in body should be less than or equal to 128"},
		{"preferred node weight 0", l2Weight(0),
			"spec.preferredNodeSelectors[0].weight in body should be greater than or equal to 1"},
		{"preferred node weight 101", l2Weight(101),
			"spec.preferredNodeSelectors[0].weight in body should be less than or equal to 100"},
		{"pool without addresses", &v1beta1.IPAddressPool{},
			"spec.addresses: Required value"},
	}
	ctx := context.Background()
	c := testenv.Shared.Client
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obj.SetNamespace(testenv.Namespace)
			tt.obj.SetName(fmt.Sprintf("rejected-%d", i))
			err := c.Create(ctx, tt.obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: got error %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("create error = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestCreateAccepted is the other side of TestCreateRejected: the values at
// the edges of each rule are accepted.
func TestCreateAccepted(t *testing.T) {
	tests := []struct {
		name string
		obj  client.Object
	}{
		{"hold and keepalive both 0", peer(func(s *v1beta2.BGPPeerSpec) { s.HoldTime, s.KeepaliveTime = seconds(0), seconds(0) })},
		{"hold 3s keepalive 1s", peer(func(s *v1beta2.BGPPeerSpec) { s.HoldTime, s.KeepaliveTime = seconds(3), seconds(1) })},
		// MetalLB derives the hold time from the keepalive (3x) when only
		// the keepalive is set.
		{"keepalive alone", peer(func(s *v1beta2.BGPPeerSpec) { s.KeepaliveTime = seconds(120) })},
		{"dynamic external with multihop", peer(func(s *v1beta2.BGPPeerSpec) {
			s.ASN, s.DynamicASN, s.EBGPMultiHop = 0, v1beta2.ExternalASNMode, true
		})},
		{"unnumbered", peer(func(s *v1beta2.BGPPeerSpec) { s.Address, s.Interface = "", "eth0" })},
		{"connectTime bounds", peer(func(s *v1beta2.BGPPeerSpec) { s.ConnectTime = seconds(65535) })},
		{"BFD bounds", bfd(func(s *v1beta1.BFDProfileSpec) {
			s.ReceiveInterval, s.TransmitInterval = ptr.To[uint32](10), ptr.To[uint32](60000)
			s.DetectMultiplier, s.MinimumTTL = ptr.To[uint32](2), ptr.To[uint32](254)
		})},
		{"aggregation bounds", bgpAdvertisement(1, 128)},
		{"weight bounds", l2Weight(100)},
	}
	ctx := context.Background()
	c := testenv.Shared.Client
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obj.SetNamespace(testenv.Namespace)
			tt.obj.SetName(fmt.Sprintf("accepted-%d", i))
			if err := c.Create(ctx, tt.obj); err != nil {
				t.Fatalf("create: %v", err)
			}
		})
	}
}

// TestUpdateRejected covers the rules that compare an object with its
// previous version.
func TestUpdateRejected(t *testing.T) {
	ctx := context.Background()
	c := testenv.Shared.Client
	ns := testenv.Namespace

	t.Run("enableGracefulRestart is immutable", func(t *testing.T) {
		p := peer(func(s *v1beta2.BGPPeerSpec) { s.EnableGracefulRestart = true })
		p.Name, p.Namespace = "graceful", ns
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("create: %v", err)
		}
		p.Spec.EnableGracefulRestart = false
		err := c.Update(ctx, p)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "enableGracefulRestart cannot be changed after creation") {
			t.Fatalf("update: got %v, want Invalid naming enableGracefulRestart", err)
		}
	})

	t.Run("ServiceL2Status node is immutable", func(t *testing.T) {
		s := &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{Name: "l2-immutable", Namespace: ns}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatalf("create: %v", err)
		}
		s.Status = v1beta1.MetalLBServiceL2Status{Node: "node-a", ServiceName: "web", ServiceNamespace: "shop"}
		if err := c.Status().Update(ctx, s); err != nil {
			t.Fatalf("set status: %v", err)
		}
		s.Status.Node = "node-b"
		err := c.Status().Update(ctx, s)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "node is immutable") {
			t.Fatalf("update: got %v, want Invalid naming the node", err)
		}
	})

	t.Run("ConfigurationState result is an enum", func(t *testing.T) {
		s := &v1beta1.ConfigurationState{ObjectMeta: metav1.ObjectMeta{Name: "enum", Namespace: ns}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatalf("create: %v", err)
		}
		s.Status.Result = "Maybe"
		err := c.Status().Update(ctx, s)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `status.result: Unsupported value: "Maybe"`) {
			t.Fatalf("update: got %v, want Invalid naming status.result", err)
		}
	})
}
