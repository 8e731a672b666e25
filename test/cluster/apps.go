package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
)

// BackendPort is the port test/backend listens on in its Pod; Services
// expose it as ServicePort.
const (
	BackendPort = 8080
	ServicePort = 80
)

// BackendDrain is how long a backend goes on serving after SIGTERM, as a
// Pod with a preStop sleep does: the time its endpoint is terminating
// while the load balancer moves new requests elsewhere.
const BackendDrain = 2 * time.Second

// App is an application: backend Pods (test/backend) on the nodes, their
// Pod objects as the kubelet reports them, and the EndpointSlice the
// EndpointSlice controller would write for its Services (every Service
// created by App.Service selects all of them).
type App struct {
	Name, Namespace string
	c               *Cluster

	mu    sync.Mutex
	pods  []*Backend
	slice *discoveryv1.EndpointSlice
}

// Backend is one Pod of an App and its endpoint's conditions.
type Backend struct {
	*lab.Pod
	Proc *proc.Process
	// The endpoint's conditions in the EndpointSlice.
	Ready, Serving, Terminating bool
}

// NewApp creates an App with no Pods in namespace ns.
func (c *Cluster) NewApp(tb testing.TB, ns, name string) *App {
	tb.Helper()
	return &App{Name: name, Namespace: ns, c: c}
}

// Labels are the App's Pods' labels, its Services' selector.
func (a *App) Labels() map[string]string { return map[string]string{"app": a.Name} }

// AddPod starts a backend Pod on n, waits until it answers, and adds it to
// the EndpointSlice ready and serving.
func (a *App) AddPod(tb testing.TB, n *lab.Node) *Backend {
	tb.Helper()
	a.mu.Lock()
	name := fmt.Sprintf("%s-%s-%d", a.Name, n.Name, len(a.pods))
	a.mu.Unlock()
	p := n.Pod(tb, name)
	b := &Backend{Pod: p, Ready: true, Serving: true}
	b.Proc = p.Start(tb, "env", "POD_NAME="+name, "NODE_NAME="+n.Name, a.c.bins.Backend,
		"--listen", fmt.Sprintf(":%d", BackendPort), "--drain", BackendDrain.String())
	url := fmt.Sprintf("http://%s/", net.JoinHostPort(p.IPv4.String(), fmt.Sprint(BackendPort)))
	if err := waitGet(tb.Context(), n.NS, url, b.Proc); err != nil {
		tb.Fatalf("cluster: backend %s: %v", name, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: a.Labels()},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "backend", Image: "steadylb/backend:lab",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: BackendPort}}}}},
	}
	a.c.createRunningPod(tb, pod, n.IPv4.String(), p.IPv4.String(), p.IPv6.String())
	a.mu.Lock()
	a.pods = append(a.pods, b)
	a.mu.Unlock()
	a.sync(tb)
	return b
}

// SetConditions changes a backend's endpoint conditions and writes the
// EndpointSlice.
func (a *App) SetConditions(tb testing.TB, b *Backend, ready, serving, terminating bool) {
	tb.Helper()
	a.mu.Lock()
	b.Ready, b.Serving, b.Terminating = ready, serving, terminating
	a.mu.Unlock()
	a.sync(tb)
}

// Terminate does what deleting a backend's Pod does: its endpoint turns
// terminating (not ready, still serving while it finishes its requests),
// the process gets SIGTERM, and once it has exited the endpoint leaves
// the EndpointSlice and the Pod goes.
func (a *App) Terminate(tb testing.TB, b *Backend) {
	tb.Helper()
	a.SetConditions(tb, b, false, true, true)
	// ip netns exec and env replaced themselves with the backend.
	_ = syscall.Kill(b.Proc.Pid(), syscall.SIGTERM)
	<-b.Proc.Done
	a.mu.Lock()
	for i, p := range a.pods {
		if p == b {
			a.pods = append(a.pods[:i], a.pods[i+1:]...)
			break
		}
	}
	a.mu.Unlock()
	a.sync(tb)
	_ = a.c.Env.Client.Delete(tb.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: a.Namespace}},
		client.GracePeriodSeconds(0))
	if err := b.Close(); err != nil {
		tb.Error(err)
	}
}

// sync writes the EndpointSlice for the current backends, as the
// EndpointSlice controller would: one IPv4 slice, labelled with the
// Service name of every Service the App made.
func (a *App) sync(tb testing.TB) {
	tb.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx := tb.Context()
	if a.slice == nil {
		return // no Service yet: Service creates it
	}
	a.slice.Endpoints = nil
	for _, b := range a.pods {
		a.slice.Endpoints = append(a.slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{b.IPv4.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(b.Ready), Serving: ptr.To(b.Serving),
				Terminating: ptr.To(b.Terminating)},
			NodeName:  ptr.To(b.Node.Name),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: a.Namespace, Name: b.Name},
		})
	}
	if err := a.c.Env.Client.Update(ctx, a.slice); err != nil {
		tb.Fatalf("cluster: write EndpointSlice %s: %v", a.slice.Name, err)
	}
}

// ServiceOption changes a Service before it is created.
type ServiceOption func(*corev1.Service)

// Local sets externalTrafficPolicy: Local.
func Local(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

// Annotate sets an annotation.
func Annotate(key, value string) ServiceOption {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[key] = value
	}
}

// Service creates the App's LoadBalancer Service (IPv4, port ServicePort
// to the backends' BackendPort) and its EndpointSlice, deleted when tb
// ends. An App has one Service.
func (a *App) Service(tb testing.TB, opts ...ServiceOption) *corev1.Service {
	tb.Helper()
	ctx := tb.Context()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeLoadBalancer,
			Selector:   a.Labels(),
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: ServicePort,
				TargetPort: intstr.FromInt32(BackendPort)}},
		},
	}
	for _, o := range opts {
		o(svc)
	}
	if err := a.c.Env.Client.Create(ctx, svc); err != nil {
		tb.Fatalf("cluster: create service %s: %v", a.Name, err)
	}
	tb.Cleanup(func() { _ = a.c.Env.Client.Delete(context.Background(), svc) })
	a.Serve(tb, svc.Name)
	return svc
}

// Serve makes the App the backends of the Service called name in the
// App's namespace, created elsewhere (by kubectl apply): it writes the
// EndpointSlice for it. An App serves one Service.
func (a *App) Serve(tb testing.TB, name string) {
	tb.Helper()
	ctx := tb.Context()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-lab", Namespace: a.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: name,
				discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP),
			Port: ptr.To(int32(BackendPort))}},
	}
	if err := a.c.Env.Client.Create(ctx, slice); err != nil {
		tb.Fatalf("cluster: create EndpointSlice for %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = a.c.Env.Client.Delete(context.Background(), slice) })
	a.mu.Lock()
	a.slice = slice
	a.mu.Unlock()
	a.sync(tb)
}

// waitGet polls url from inside ns until it answers 200, or fails when p
// exits or ctx ends.
func waitGet(ctx context.Context, ns *netns.NS, url string, p *proc.Process) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := getIn(ctx, ns, url)
		if err == nil {
			return nil
		}
		select {
		case <-p.Done:
			return fmt.Errorf("exited: %v\n%s", p.Exited(), p.Output())
		case <-ctx.Done():
			return fmt.Errorf("%s never answered: %v", url, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// getIn fetches url with a connection opened inside ns; an answer other
// than 200 is an error.
func getIn(ctx context.Context, ns *netns.NS, url string) error {
	code, err := StatusIn(ctx, ns, url)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d", url, code)
	}
	return err
}

// StatusIn fetches url with a connection opened inside ns and returns the
// answer's status code.
func StatusIn(ctx context.Context, ns *netns.NS, url string) (int, error) {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := ns.Run(func() (err error) {
			var d net.Dialer
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
