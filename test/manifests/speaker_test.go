package manifests

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// speakerUser is the user the DaemonSet's Pods act as.
func speakerUser(t *testing.T, r rendered) string {
	t.Helper()
	d := r.daemonSet(t)
	return fmt.Sprintf("system:serviceaccount:%s:%s", d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
}

// TestSpeakerRBACIsEnforced asks the API server, as the speaker's
// identity, for what its roles grant and what they must not: Secrets only
// fetched by name in its namespace (BGPPeer passwords; no list or watch, so
// it cannot enumerate them; no other namespace) and no writes to Services.
func TestSpeakerRBACIsEnforced(t *testing.T) {
	r := renderDefault(t)
	cfg, _ := impersonating(t, speakerUser(t, r))
	c := impersonatingClient(t, cfg)
	watcher := impersonatingWatcher(t, cfg)
	applyRBAC(t, r, c)

	dry := client.DryRunAll
	status := func(ns string) *v1beta1.ServiceL2Status {
		return &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "l2-"}}
	}
	notFoundIsAllowed := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	tests := []permission{
		{"list Services, EndpointSlices and Nodes everywhere", func() error {
			if err := c.List(ctx, &corev1.ServiceList{}); err != nil {
				return err
			}
			if err := c.List(ctx, &discoveryv1.EndpointSliceList{}); err != nil {
				return err
			}
			return c.List(ctx, &corev1.NodeList{})
		}, false},
		{"list speaker Pods and L2Advertisements in its namespace", func() error {
			if err := c.List(ctx, &corev1.PodList{}, client.InNamespace(testenv.Namespace)); err != nil {
				return err
			}
			return c.List(ctx, &v1beta1.L2AdvertisementList{}, client.InNamespace(testenv.Namespace))
		}, false},
		{"create a ServiceL2Status in its namespace", func() error { return c.Create(ctx, status(testenv.Namespace), dry) }, false},
		{"delete a ServiceL2Status in its namespace", func() error {
			return notFoundIsAllowed(c.Delete(ctx, &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "l2-none"}}, dry))
		}, false},
		{"create and delete a ServiceBGPStatus in its namespace", func() error {
			st := &v1beta1.ServiceBGPStatus{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, GenerateName: "bgp-"}}
			if err := c.Create(ctx, st, dry); err != nil {
				return err
			}
			return notFoundIsAllowed(c.Delete(ctx, &v1beta1.ServiceBGPStatus{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "bgp-none"}}, dry))
		}, false},
		{"list BGPPeers, BGPAdvertisements, BFDProfiles and Communities in its namespace", func() error {
			for _, l := range []client.ObjectList{&v1beta2.BGPPeerList{}, &v1beta1.BGPAdvertisementList{}, &v1beta1.BFDProfileList{}, &v1beta1.CommunityList{}} {
				if err := c.List(ctx, l, client.InNamespace(testenv.Namespace)); err != nil {
					return err
				}
			}
			return nil
		}, false},
		{"get a password Secret by name in its namespace", func() error {
			return notFoundIsAllowed(c.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "no-such-password"}, &corev1.Secret{}))
		}, false},
		{"create an event", func() error {
			e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "probe-"},
				EventTime: metav1.NowMicro(), ReportingController: "metallb-speaker", ReportingInstance: "probe",
				Action: "Announce", Reason: "nodeAssigned", Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{Kind: "Service", Namespace: "default", Name: "kubernetes"}}
			return c.Create(ctx, e, dry)
		}, false},

		{"list Secrets in its namespace", func() error {
			return c.List(ctx, &corev1.SecretList{}, client.InNamespace(testenv.Namespace))
		}, true},
		{"list the basic-auth Secrets in its namespace", func() error {
			return c.List(ctx, &corev1.SecretList{}, client.InNamespace(testenv.Namespace),
				client.MatchingFields{"type": string(corev1.SecretTypeBasicAuth)})
		}, true},
		{"watch Secrets in its namespace", func() error {
			w, err := watcher.Watch(ctx, &corev1.SecretList{}, client.InNamespace(testenv.Namespace))
			if err == nil {
				w.Stop()
			}
			return err
		}, true},
		{"get a Secret in another namespace", func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "any"}, &corev1.Secret{})
		}, true},
		{"list Secrets in another namespace", func() error {
			return c.List(ctx, &corev1.SecretList{}, client.InNamespace("default"))
		}, true},
		{"create a ServiceBGPStatus in another namespace", func() error {
			return c.Create(ctx, &v1beta1.ServiceBGPStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "bgp-"}}, dry)
		}, true},
		{"patch a BGPPeer", func() error {
			p := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "rbac-probe"}}
			return notFoundIsAllowed(c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)), dry))
		}, true},
		{"patch a Service", func() error {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}}
			return c.Patch(ctx, svc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)), dry)
		}, true},
		{"list Pods in every namespace", func() error { return c.List(ctx, &corev1.PodList{}) }, true},
		{"create a ServiceL2Status in another namespace", func() error { return c.Create(ctx, status("default"), dry) }, true},
		{"create an IPAddressPool", func() error {
			pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "rbac-probe"},
				Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.0/28"}}}
			return c.Create(ctx, pool, dry)
		}, true},
	}
	checkPermissions(t, tests)
}

// TestSpeakerWorksWithItsRBAC runs the speaker binary with the DaemonSet's
// arguments as the manifests' ServiceAccount, alone (no membership), and
// takes one Service through everything it writes: the ServiceL2Status
// (created, its status patched, deleted), a nodeAssigned event and its
// ConfigurationState.
func TestSpeakerWorksWithItsRBAC(t *testing.T) {
	r := renderDefault(t)
	cfg, kubeconfig := impersonating(t, speakerUser(t, r))
	applyRBAC(t, r, impersonatingClient(t, cfg))
	admin := testenv.Shared.Client

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "rbac-speaker-"}}
	if err := admin.Create(ctx, node); err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, node) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, GenerateName: "speaker-",
		Labels: r.daemonSet(t).Spec.Template.Labels},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "speaker", Image: speakerImage}}}}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatalf("create speaker pod: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, pod, client.GracePeriodSeconds(0)) })

	ns := fixture.Namespace(t)
	fixture.Pool(t, "rbac-speaker", ns, "198.51.100.240/28")
	ad := &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "rbac-speaker"},
		Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"rbac-speaker"}}}
	if err := admin.Create(ctx, ad); err != nil {
		t.Fatalf("create L2Advertisement: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, ad) })
	// A BGPPeer whose password is in a Secret: the speaker gets it by name
	// as its ServiceAccount, else its ConfigurationState would name it.
	md5 := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "rbac-speaker-md5"},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{corev1.BasicAuthPasswordKey: []byte("s3cret")}}
	peer := &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "rbac-speaker"},
		Spec: v1beta2.BGPPeerSpec{MyASN: 64500, ASN: 64501, Address: "203.0.113.250", PasswordSecret: corev1.SecretReference{Name: md5.Name}}}
	for _, o := range []client.Object{md5, peer} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, o) })
	}
	svc := fixture.Service(t, ns, "web")
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.241"}}
	if err := admin.Status().Update(ctx, svc); err != nil {
		t.Fatalf("set service status: %v", err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"203.0.113.5"}, NodeName: ptr.To(node.Name)}}}
	if err := admin.Create(ctx, slice); err != nil {
		t.Fatalf("create EndpointSlice: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, slice) })

	// The real speaker answers ARP/NDP on every usable interface: it runs
	// in a namespace with none, reaching only the API server.
	box := lab.NewSandbox(t, testenv.Shared)
	probe := "127.0.0.1:7474"
	args := append(r.daemonSet(t).Spec.Template.Spec.Containers[0].Args,
		"--kubeconfig", kubeconfig, "--namespace", testenv.Namespace, "--node-name", node.Name, "--pod-name", pod.Name,
		"--ml-bindport", "0", "--metrics-bind-address", "0", "--health-probe-bind-address", probe)
	name, cmdline := box.Command(speakerBinary, args...)
	p := proc.Start(t, name, cmdline...)
	alive, cancel := p.Alive(ctx) // a speaker that exits ends the wait at once
	defer cancel()
	err := wait.PollUntilContextTimeout(alive, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := box.Get(ctx, "http://"+probe+"/readyz")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("speaker never became ready: %v\n%s", err, p.Output())
	}

	key := client.ObjectKeyFromObject(svc)
	var st v1beta1.ServiceL2Status
	fixture.WaitFor(t, "the speaker's ServiceL2Status, status written and owned by its Pod", func() bool {
		var list v1beta1.ServiceL2StatusList
		if err := admin.List(ctx, &list, client.InNamespace(testenv.Namespace), client.MatchingLabels{v1beta1.LabelNode: node.Name}); err != nil || len(list.Items) != 1 {
			return false
		}
		st = list.Items[0]
		return st.Status.ServiceName == key.Name && len(st.OwnerReferences) == 1 && st.OwnerReferences[0].UID == pod.UID
	})
	fixture.WaitFor(t, "a nodeAssigned event (events.k8s.io)", func() bool {
		return hasEvent(admin, ns, "Service", svc.Name, "nodeAssigned")
	})
	fixture.WaitFor(t, "ConfigurationState speaker-<node> Valid", func() bool {
		var state v1beta1.ConfigurationState
		err := admin.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: "speaker-" + node.Name}, &state)
		return err == nil && state.Status.Result == v1beta1.ConfigurationValid
	})
	if err := admin.Delete(ctx, svc); err != nil {
		t.Fatalf("delete service: %v", err)
	}
	fixture.WaitFor(t, "the ServiceL2Status to be deleted", func() bool {
		err := admin.Get(ctx, client.ObjectKeyFromObject(&st), &v1beta1.ServiceL2Status{})
		return apierrors.IsNotFound(err)
	})
	if out := p.Output(); containsFold(out, "forbidden") {
		t.Errorf("the speaker was refused a request:\n%s", out)
	}
}
