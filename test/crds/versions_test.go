package crds

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestBGPPeerV1beta1ServedAsV1beta2 writes a peer in the deprecated version
// and reads it in the storage version, and the other way round: the CRD
// serves both from one object with conversion strategy None.
func TestBGPPeerV1beta1ServedAsV1beta2(t *testing.T) {
	ctx := context.Background()
	c := testenv.Shared.Client
	ns := testenv.Namespace

	old := &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "from-v1beta1", Namespace: ns},
		Spec: v1beta1.BGPPeerSpec{
			MyASN: 64512, ASN: 64513, Address: "198.51.100.7", SrcAddress: "198.51.100.1", Port: 1179,
			HoldTime:      &metav1.Duration{Duration: 30 * time.Second},
			KeepaliveTime: &metav1.Duration{Duration: 10 * time.Second},
			RouterID:      "198.51.100.1", Password: "pw", BFDProfile: "fast", EBGPMultiHop: true,
			NodeSelectors: []v1beta1.NodeSelector{{
				MatchLabels:      map[string]string{"rack": "1"},
				MatchExpressions: []v1beta1.MatchExpression{{Key: "zone", Operator: "In", Values: []string{"a", "b"}}},
			}},
		}}
	if err := c.Create(ctx, old); err != nil {
		t.Fatalf("create v1beta1 peer: %v", err)
	}
	got := &v1beta2.BGPPeer{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatalf("get as v1beta2: %v", err)
	}
	want := v1beta2.BGPPeerSpec{
		MyASN: 64512, ASN: 64513, Address: "198.51.100.7", SrcAddress: "198.51.100.1", Port: 1179,
		HoldTime:      &metav1.Duration{Duration: 30 * time.Second},
		KeepaliveTime: &metav1.Duration{Duration: 10 * time.Second},
		RouterID:      "198.51.100.1", Password: "pw", BFDProfile: "fast", EBGPMultiHop: true,
		NodeSelectors: []metav1.LabelSelector{{
			MatchLabels: map[string]string{"rack": "1"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}},
		}},
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("v1beta1 peer read as v1beta2 (-want +got):\n%s", diff)
	}

	fresh := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "from-v1beta2", Namespace: ns},
		Spec: v1beta2.BGPPeerSpec{MyASN: 64512, ASN: 64514, Address: "198.51.100.8"}}
	if err := c.Create(ctx, fresh); err != nil {
		t.Fatalf("create v1beta2 peer: %v", err)
	}
	asOld := &v1beta1.BGPPeer{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(fresh), asOld); err != nil {
		t.Fatalf("get as v1beta1: %v", err)
	}
	if asOld.Spec.ASN != 64514 || asOld.Spec.Address != "198.51.100.8" || asOld.Spec.Port != 179 {
		t.Errorf("v1beta2 peer read as v1beta1 = %+v, want peerASN 64514, address 198.51.100.8, port 179", asOld.Spec)
	}
}
