package manifests

import (
	"context"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/kubeletvol"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// podFields are the values the kubelet gives a container's fieldRef env.
type podFields map[string]string

// containerEnv is the container's env as the kubelet would set it: plain
// values, and fieldRefs from fields (one the test does not know fails it).
// A value under a volume's mount path is moved to the directory that
// stands for that volume in mounts, since the test cannot mount at the
// manifest's absolute paths.
func containerEnv(t *testing.T, c corev1.Container, fields podFields, mounts map[string]string) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			var ok bool
			if v, ok = fields[e.ValueFrom.FieldRef.FieldPath]; !ok {
				t.Fatalf("env %s: the test does not know fieldRef %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom != nil:
			t.Fatalf("env %s: the test knows only values and fieldRefs", e.Name)
		}
		for mountPath, dir := range mounts {
			if v == mountPath || strings.HasPrefix(v, mountPath+"/") {
				v = dir + strings.TrimPrefix(v, mountPath)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// secretMount is where the container mounts the Secret volume named
// secretName.
func secretMount(t *testing.T, spec corev1.PodSpec, c corev1.Container, secretName string) string {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secretName {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	t.Fatalf("container %s mounts no volume of Secret %s", c.Name, secretName)
	return ""
}

// shippedSecret is the memberlist Secret as config/default renders it.
func shippedSecret(t *testing.T, r rendered, name string) *corev1.Secret {
	t.Helper()
	o := r.find("Secret", testenv.Namespace, name)
	if o == nil {
		t.Fatalf("rendered manifests have no Secret %s/%s", testenv.Namespace, name)
	}
	var s corev1.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
		t.Fatalf("convert Secret: %v", err)
	}
	return &s
}

// speakerHost is one node of the test: a network namespace with an
// address on a veth to the other, its Node and speaker Pod objects, and
// the speaker's Secret volume.
type speakerHost struct {
	box  *lab.Sandbox
	ip   string
	node *corev1.Node
	pod  *corev1.Pod
	vol  *kubeletvol.Volume
	proc *proc.Process
}

func (h *speakerHost) url(port, path string) string {
	return "http://" + net.JoinHostPort(h.ip, port) + path
}

// TestInstallGossipsEncrypted installs as a user would: the shipped
// memberlist Secret without a key, the controller and two speakers run
// with exactly the env and args of the rendered Deployment and DaemonSet
// (plus a kubeconfig), each as its ServiceAccount, the Secret mounted as
// the kubelet does. The speakers must wait, alive and unready, without
// exiting; the controller must write a key; once the test, playing the
// kubelet, puts it in their volumes, both become ready and find each
// other over encrypted gossip.
func TestInstallGossipsEncrypted(t *testing.T) {
	r := renderDefault(t)
	admin := testenv.Shared.Client
	speakerCfg, speakerKubeconfig := impersonating(t, speakerUser(t, r))
	applyRBAC(t, r, impersonatingClient(t, speakerCfg))
	_, controllerKubeconfig := impersonating(t, controllerUser(t, r))

	ds := r.daemonSet(t)
	container := ds.Spec.Template.Spec.Containers[0]
	var secretName string
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	shipped := shippedSecret(t, r, secretName)
	if len(shipped.Data)+len(shipped.StringData) != 0 {
		t.Fatalf("the shipped Secret %s carries data; it must ship without a key", secretName)
	}
	// Fresh install: whatever an earlier test left goes first.
	_ = admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: secretName}})
	fixture.WaitFor(t, "no Secret "+secretName, func() bool {
		return apierrors.IsNotFound(admin.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: secretName}, &corev1.Secret{}))
	})
	secret := shipped.DeepCopy()
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatalf("create the shipped Secret: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), secret) })

	hosts := []*speakerHost{{ip: "198.51.100.31"}, {ip: "198.51.100.32"}}
	for _, h := range hosts {
		h.box = lab.NewSandbox(t, testenv.Shared)
	}
	netns.Veth(t, hosts[0].box.NS, "eth0", hosts[1].box.NS, "eth0")
	mountPath := secretMount(t, ds.Spec.Template.Spec, container, secretName)
	for _, h := range hosts {
		h.box.NS.IP(t, "addr", "add", h.ip+"/24", "dev", "eth0")
		h.box.NS.IP(t, "link", "set", "eth0", "up")
		h.node, h.pod = speakerObjects(t, admin, ds.Spec.Template.Labels, h.ip)
		dir := t.TempDir()
		vol, err := kubeletvol.New(dir, shipped.Data)
		if err != nil {
			t.Fatal(err)
		}
		h.vol = vol
		env := containerEnv(t, container, podFields{
			"metadata.namespace": testenv.Namespace, "metadata.name": h.pod.Name,
			"spec.nodeName": h.node.Name, "status.hostIP": h.ip, "status.podIP": h.ip,
		}, map[string]string{mountPath: dir})
		env = append(env, "KUBECONFIG="+speakerKubeconfig)
		name, cmdline := h.box.Command(speakerBinary, container.Args...)
		h.proc = proc.StartEnv(t, env, name, cmdline...)
	}

	for _, h := range hosts {
		fixture.WaitFor(t, "the speaker on "+h.ip+" to say it waits for the key, live and unready", func() bool {
			_, healthErr := h.box.Get(ctx, h.url("7474", "/healthz"))
			_, readyErr := h.box.Get(ctx, h.url("7474", "/readyz"))
			return healthErr == nil && readyErr != nil && strings.Contains(readyErr.Error(), "503") &&
				strings.Contains(h.proc.Output(), "waiting for the memberlist key")
		})
	}

	d := r.deployment(t)
	ctrl := d.Spec.Template.Spec.Containers[0]
	ctrlEnv := append(containerEnv(t, ctrl, podFields{"metadata.namespace": testenv.Namespace}, nil), "KUBECONFIG="+controllerKubeconfig)
	args := append(ctrl.Args, "--namespace", testenv.Namespace, "--leader-election-id", "memberlist-test",
		"--metrics-bind-address", "0", "--health-probe-bind-address", proc.FreeAddr(t))
	controller := proc.StartEnv(t, ctrlEnv, binary, args...)

	var key []byte
	fixture.WaitFor(t, "the controller to write a key into Secret "+secretName, func() bool {
		var s corev1.Secret
		if err := admin.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: secretName}, &s); err != nil {
			return false
		}
		key = s.Data["secretkey"]
		return len(key) > 0
	})
	for _, h := range hosts {
		if err := h.vol.Update(map[string][]byte{"secretkey": key}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hosts {
		fixture.WaitFor(t, "the speaker on "+h.ip+" to be ready with two live members", func() bool {
			if _, err := h.box.Get(ctx, h.url("7474", "/readyz")); err != nil {
				return false
			}
			body, err := h.box.Get(ctx, h.url("7472", "/metrics"))
			return err == nil && strings.Contains(string(body), `steadylb_memberlist_members{state="alive"} 2`)
		})
	}
	for _, h := range hosts {
		select {
		case <-h.proc.Done:
			t.Errorf("the speaker on %s exited: %v", h.ip, h.proc.Exited())
		default:
		}
		if out := h.proc.Output(); !strings.Contains(out, `"encrypted":true`) || containsFold(out, "forbidden") {
			t.Errorf("the speaker on %s did not start encrypted, or was refused a request:\n%s", h.ip, out)
		}
	}
	if out := controller.Output(); containsFold(out, "forbidden") {
		t.Errorf("the controller was refused a request:\n%s", out)
	}

	// A user rotates the key; the kubelet brings it to one node, and to
	// the other only later. The speakers move to it without losing each
	// other: the first accepts it and waits for the second.
	rotated := []byte("a-new-key-from-the-operator-0123456789")
	var s corev1.Secret
	if err := admin.Get(ctx, types.NamespacedName{Namespace: testenv.Namespace, Name: secretName}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["secretkey"] = rotated
	if err := admin.Update(ctx, &s); err != nil {
		t.Fatalf("rotate the key: %v", err)
	}
	if err := hosts[0].vol.Update(s.Data); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the first speaker to accept the new key", func() bool {
		return strings.Contains(hosts[0].proc.Output(), "new memberlist key: accepting it")
	})
	if err := hosts[1].vol.Update(s.Data); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		fixture.WaitFor(t, "the speaker on "+h.ip+" to drop the old key", func() bool {
			return strings.Contains(h.proc.Output(), "the old one is dropped")
		})
	}
	for _, h := range hosts {
		body, err := h.box.Get(ctx, h.url("7472", "/metrics"))
		if err != nil || !strings.Contains(string(body), `steadylb_memberlist_members{state="alive"} 2`) ||
			!strings.Contains(string(body), `steadylb_memberlist_member_events_total{event="leave"} 0`) {
			t.Errorf("after the rotation the speaker on %s does not see both alive and no departure (%v)", h.ip, err)
		}
		if out := h.proc.Output(); strings.Contains(out, "could decrypt") {
			t.Errorf("the speaker on %s received messages it could not read during the rotation", h.ip)
		}
	}
}

// speakerObjects creates the Node and the speaker Pod (with the
// DaemonSet's labels, and ip as its status.podIP) a kubelet would have.
func speakerObjects(t *testing.T, admin client.Client, labels map[string]string, ip string) (*corev1.Node, *corev1.Pod) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "ml-node-"}}
	if err := admin.Create(ctx, node); err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), node) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, GenerateName: "speaker-", Labels: labels},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "speaker", Image: speakerImage}}}}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatalf("create speaker pod: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.HostIP = ip
	if err := admin.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod IP: %v", err)
	}
	return node, pod
}
