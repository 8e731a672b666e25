package servicelist

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// services are Services with most fields a LoadBalancer Service carries,
// so that a field the decoder lost would show.
func services(n int) []corev1.Service {
	out := make([]corev1.Service, n)
	for i := range out {
		name := fmt.Sprintf("svc-%d", i)
		out[i] = corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "7",
				Labels: map[string]string{"app": name}, Annotations: map[string]string{"metallb.io/loadBalancerIPs": "192.0.2.1"},
				CreationTimestamp: metav1.Unix(int64(1e9+i), 0),
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Update", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack), IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
				LoadBalancerClass: ptr.To("steadylb.io/x"), AllocateLoadBalancerNodePorts: ptr.To(false),
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP}}},
			Status: corev1.ServiceStatus{
				LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}},
				Conditions: []metav1.Condition{{Type: "AddressAssigned", Status: metav1.ConditionTrue, Reason: "Assigned",
					Message: "assigned", LastTransitionTime: metav1.Unix(2e9, 0)}}},
		}
	}
	return out
}

// encode is the body the API server sends for a list, in protobuf.
func encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	codec := scheme.Codecs.EncoderForVersion(s, corev1.SchemeGroupVersion)
	if err := codec.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// reference decodes a body as client-go does, and strips managedFields
// as the controller's cache does.
func reference(data []byte) ([]corev1.Service, error) {
	var list corev1.ServiceList
	err := runtime.DecodeInto(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), data, &list)
	for i := range list.Items {
		list.Items[i].ManagedFields = nil
	}
	return list.Items, err
}

func decodeBytes(data []byte) ([]corev1.Service, error) {
	return decodeServiceList(bufio.NewReader(bytes.NewReader(data)), nil)
}

// TestDecodeServiceListHandsEachOver: each is given every Service once,
// in the list's order, and what it was given still reads as the list's
// Service once the decoding is done, also when the list grew past its
// first guess of the count (a large first Service, small ones after it).
func TestDecodeServiceListHandsEachOver(t *testing.T) {
	svcs := services(200)
	svcs[0].Annotations["big"] = string(make([]byte, 20_000))
	body := encode(t, &corev1.ServiceList{Items: svcs})
	var given []*corev1.Service
	got, err := decodeServiceList(bufio.NewReader(bytes.NewReader(body)), func(s *corev1.Service) { given = append(given, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(given) != len(got) {
		t.Fatalf("each was given %d Services of %d", len(given), len(got))
	}
	if &got[0] == given[0] {
		t.Fatal("the list never grew past its first guess: the test does not show that what each holds survives it")
	}
	for i := range got {
		if diff := cmp.Diff(&got[i], given[i]); diff != "" {
			t.Fatalf("Service %d as each was given it (-list +given):\n%s", i, diff)
		}
	}
}

// TestDecodeServiceListAsClientGo: the Services decoded are client-go's,
// but for their managedFields (services() has some).
func TestDecodeServiceListAsClientGo(t *testing.T) {
	// An envelope field the decoder does not know, before the list, and a
	// list field it does not know between the items: both skipped.
	two := encode(t, &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c"}, Items: services(2)})
	extra := append(append([]byte{}, two[:4]...), 0x78, 0x05) // field 15, varint 5
	extra = append(extra, two[4:]...)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty", encode(t, &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})},
		{"one", encode(t, &corev1.ServiceList{Items: services(1)})},
		{"many", encode(t, &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: services(300)})},
		{"unknown envelope field", extra},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := reference(tc.body)
			if err != nil {
				t.Fatalf("client-go: %v", err)
			}
			got, err := decodeBytes(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("differs from client-go's decoding (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeServiceListRefuses(t *testing.T) {
	body := encode(t, &corev1.ServiceList{Items: services(3)})
	// A body cut short is an error, never a shorter list: only the
	// envelope's empty trailing fields, after the list, may be missing.
	for n := len(protobufMagic); n < len(body); n++ {
		if got, err := decodeBytes(body[:n]); err == nil && len(got) != 3 {
			t.Fatalf("a body cut at %d of %d bytes decoded to %d Services without error", n, len(body), len(got))
		}
	}
	status := encode(t, &metav1.Status{Status: metav1.StatusFailure, Message: "gone", Code: 410})
	if _, err := decodeBytes(status); !errors.Is(err, errNotServiceList) {
		t.Errorf("a Status decoded as %v, want errNotServiceList", err)
	}
	huge := append(append([]byte{}, protobufMagic...), 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f) // TypeMeta of 4 GiB
	if _, err := decodeBytes(huge); err == nil {
		t.Error("a TypeMeta longer than the body decoded without error")
	}
}

// FuzzDecodeServiceList: any body either fails or decodes to what
// client-go decodes from it, and never panics or allocates what the body
// only claims.
func FuzzDecodeServiceList(f *testing.F) {
	f.Add(encode(f, &corev1.ServiceList{Items: services(2)}))
	f.Add(encode(f, &corev1.ServiceList{}))
	f.Add(encode(f, &metav1.Status{Message: "x"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		data = append(append([]byte{}, protobufMagic...), data...)
		got, err := decodeBytes(data)
		if err != nil {
			return
		}
		want, rerr := reference(data)
		if rerr == nil && !cmp.Equal(want, got) {
			t.Fatalf("decoded otherwise than client-go:\n%s", cmp.Diff(want, got))
		}
	})
}

// BenchmarkDecodeServiceList decodes the body of a LIST of 10,000
// Services held in memory, as List does and as client-go does
// (the whole body, then the list); the difference is the decoding alone,
// without the overlap with the transfer that List gains on a
// real connection.
func BenchmarkDecodeServiceList(b *testing.B) {
	body := encode(b, &corev1.ServiceList{Items: services(10_000)})
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeBytes(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reference(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
