package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/podproc"
	"github.com/steadylb/steadylb/test/scrape"
)

// Speaker is the speaker DaemonSet's Pod on a node, running.
type Speaker struct {
	*podproc.Container
	Node *lab.Node
	c    *Cluster
}

// Controller is one replica of the controller Deployment, running in a
// namespace of its own (it needs nothing but the API server).
type Controller struct {
	*podproc.Container
	Sandbox *lab.Sandbox
	c       *Cluster
}

var podSerial atomic.Int64

// StartSpeaker starts the speaker DaemonSet's container on n, as the
// kubelet would from the rendered DaemonSet, with the node's current
// speaker Pod (see ReplaceSpeakerPod). It does not wait; see WaitReady.
func (c *Cluster) StartSpeaker(tb testing.TB, n *lab.Node) *Speaker {
	tb.Helper()
	pod := c.speakerPod(tb, n)
	cs := c.Runtime.Start(tb, pod, podproc.Placement{NS: n.NS, APIServer: c.apiServer})
	return &Speaker{Container: cs[0], Node: n, c: c}
}

// speakerPod reads the node's current speaker Pod object.
func (c *Cluster) speakerPod(tb testing.TB, n *lab.Node) *corev1.Pod {
	tb.Helper()
	var pod corev1.Pod
	key := client.ObjectKey{Namespace: c.Lab.Namespace(), Name: c.speakerPodName(n)}
	if err := c.Env.Client.Get(tb.Context(), key, &pod); err != nil {
		tb.Fatalf("cluster: speaker pod of %s: %v", n.Name, err)
	}
	return &pod
}

func (c *Cluster) speakerPodName(n *lab.Node) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, ok := c.speakerPods[n.Name]; ok {
		return name
	}
	return n.PodName()
}

// ReplaceSpeakerPod does to the node's speaker Pod object what a
// DaemonSet rolling update does: the old Pod is deleted (it shows a
// deletion timestamp while its container stops; the caller stops it) and,
// once gone, a new Pod of another name takes its place. It returns after
// the old Pod was marked for deletion; finish, called after the old
// container has exited, removes it as the kubelet would and creates the
// new one.
func (c *Cluster) ReplaceSpeakerPod(tb testing.TB, n *lab.Node) (finish func()) {
	tb.Helper()
	ctx := tb.Context()
	old := c.speakerPod(tb, n)
	grace := int64(10)
	if err := c.Env.Client.Delete(ctx, old, client.GracePeriodSeconds(grace)); err != nil {
		tb.Fatalf("cluster: delete speaker pod %s: %v", old.Name, err)
	}
	return func() {
		tb.Helper()
		if err := c.Env.Client.Delete(ctx, old, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			tb.Fatalf("cluster: remove speaker pod %s: %v", old.Name, err)
		}
		name := fmt.Sprintf("speaker-%s-%d", n.Name, podSerial.Add(1))
		pod, err := c.speakerPodObject(name, n)
		if err != nil {
			tb.Fatal(err)
		}
		// It outlives the test: it is the node's speaker Pod from now on.
		if err := c.runningPod(ctx, pod, n.IPv4.String(), n.IPv4.String(), n.IPv6.String()); err != nil {
			tb.Fatal(err)
		}
		c.mu.Lock()
		c.speakerPods[n.Name] = name
		c.mu.Unlock()
	}
}

// createRunningPod creates pod and gives it the status a kubelet reports
// for a running Pod with these IPs (the first is status.podIP). It is
// deleted when tb ends.
func (c *Cluster) createRunningPod(tb testing.TB, pod *corev1.Pod, hostIP string, podIPs ...string) {
	tb.Helper()
	if err := c.runningPod(tb.Context(), pod, hostIP, podIPs...); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = c.Env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
	})
}

func (c *Cluster) runningPod(ctx context.Context, pod *corev1.Pod, hostIP string, podIPs ...string) error {
	if err := c.Env.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("cluster: create pod %s: %w", pod.Name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: hostIP,
		HostIPs:    []corev1.HostIP{{IP: hostIP}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	for _, ip := range podIPs {
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(podIPs) > 0 {
		pod.Status.PodIP = podIPs[0]
	}
	if err := c.Env.Client.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("cluster: status of pod %s: %w", pod.Name, err)
	}
	return nil
}

// speakerPodObject is the Pod the speaker DaemonSet would create on n.
func (c *Cluster) speakerPodObject(name string, n *lab.Node) (*corev1.Pod, error) {
	ds, err := c.Manifests.DaemonSet("speaker")
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Lab.Namespace(), Labels: ds.Spec.Template.Labels},
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = n.Name
	return pod, nil
}

// adoptSpeakerPod replaces the lab's speaker Pod object of n (which has
// the labels and addresses but not the DaemonSet's spec: its service
// account binds the token) by the DaemonSet's Pod of the same name.
func (c *Cluster) adoptSpeakerPod(ctx context.Context, n *lab.Node) error {
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n.PodName(), Namespace: c.Lab.Namespace()}}
	if err := c.Env.Client.Delete(ctx, old, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("cluster: replace the lab's speaker pod of %s: %w", n.Name, err)
	}
	pod, err := c.speakerPodObject(n.PodName(), n)
	if err != nil {
		return err
	}
	return c.runningPod(ctx, pod, n.IPv4.String(), n.IPv4.String(), n.IPv6.String())
}

// WaitReady waits until the speaker's readiness probe, as the DaemonSet
// declares it, passes.
func (s *Speaker) WaitReady(ctx context.Context) error {
	url, err := s.ProbeURL(true)
	if err != nil {
		return err
	}
	return waitProbe(ctx, s.Container, url, func(ctx context.Context, url string) error {
		_, err := s.c.Lab.Client.Get(ctx, url)
		return err
	})
}

// MetricsURL is the speaker's metrics endpoint (the container's
// "monitoring" port on the node's address), reachable from the client.
func (s *Speaker) MetricsURL() string {
	return "http://" + net.JoinHostPort(s.Node.IPv4.String(), lab.MetricsPort) + "/metrics"
}

// StartController starts one replica of the controller Deployment, as the
// kubelet would from the rendered Deployment, in a sandbox namespace of
// its own. It does not wait; see WaitReady.
func (c *Cluster) StartController(tb testing.TB) *Controller {
	tb.Helper()
	d, err := c.Manifests.Deployment("controller")
	if err != nil {
		tb.Fatal(err)
	}
	box := lab.NewSandbox(tb, c.Env)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "controller-" + strconv.FormatInt(podSerial.Add(1), 10), Namespace: d.Namespace,
			Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = c.Lab.Nodes[0].Name
	spec := pod.Spec
	// The Pod's IP stands for the sandbox: it has only a loopback.
	c.createRunningPod(tb, pod, c.Lab.Nodes[0].IPv4.String())
	pod.Spec = spec
	cs := c.Runtime.Start(tb, pod, podproc.Placement{NS: box.NS, APIServer: c.apiServer})
	return &Controller{Container: cs[0], Sandbox: box, c: c}
}

// WaitReady waits until the controller's readiness probe passes (a
// standby replica is ready too; a leader once its startup barrier opened,
// which needs a pool).
func (ctl *Controller) WaitReady(ctx context.Context) error { return ctl.waitProbe(ctx, true) }

// WaitLive waits until the controller's liveness probe passes: it runs.
func (ctl *Controller) WaitLive(ctx context.Context) error { return ctl.waitProbe(ctx, false) }

func (ctl *Controller) waitProbe(ctx context.Context, readiness bool) error {
	url, err := ctl.ProbeURL(readiness)
	if err != nil {
		return err
	}
	return waitProbe(ctx, ctl.Container, url, func(ctx context.Context, url string) error {
		_, err := ctl.Sandbox.Get(ctx, url)
		return err
	})
}

func waitProbe(ctx context.Context, c *podproc.Container, url string, get func(context.Context, string) error) error {
	for {
		probe, cancel := context.WithTimeout(ctx, time.Second)
		err := get(probe, url)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-c.Done:
			return fmt.Errorf("cluster: %s exited before it was ready: %v\n%s", c.Pod.Name, c.Exited(), c.Output())
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s never became ready (%s: %v): %w\n%s", c.Pod.Name, url, err, ctx.Err(), c.Output())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MetricsURL is the controller's metrics endpoint inside its sandbox.
func (ctl *Controller) MetricsURL() string { return "http://127.0.0.1:7472/metrics" }

// WaitIdle waits until the controller's work queues have been empty and
// its reconcilers idle for three scrapes in a row (scrape.Samples.Idle).
func (ctl *Controller) WaitIdle(ctx context.Context) error {
	streak := 0
	for streak < 3 {
		body, err := ctl.Sandbox.Get(ctx, ctl.MetricsURL())
		if err == nil {
			var m scrape.Samples
			if m, err = scrape.Parse(bytes.NewReader(body)); err == nil && m.Idle("service", "pools", "reservations") {
				streak++
			} else {
				streak = 0
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s never became idle: %w", ctl.Pod.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
