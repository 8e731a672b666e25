package podproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/testenv"
)

// Image is what an image stands for: a built binary, run as the image's
// entrypoint /<repository name>, and the image's user.
type Image struct {
	Binary   string
	UID, GID int64
}

// Runtime starts Pods' containers against one control plane.
type Runtime struct {
	// Env is the control plane; its admin client reads Secrets and
	// ConfigMaps and requests tokens, as the kubelet's credentials would.
	Env *testenv.Env
	// Podinit is the built test/podinit binary.
	Podinit string
	// Images maps an image's repository name without registry, path and
	// tag ("speaker" for ghcr.io/steadylb/speaker:latest) to what runs.
	Images map[string]Image
	// RefreshEvery is how often Secret and ConfigMap volumes are read
	// again and rewritten when they changed (the kubelet does it about
	// every minute); 0 writes them once.
	RefreshEvery time.Duration

	clientset kubernetes.Interface
}

// Placement is where a Pod runs.
type Placement struct {
	// NS is the network namespace: the node's for a hostNetwork Pod.
	NS *netns.NS
	// APIServer is host:port at which the API server is reachable from
	// NS: the kubelet's KUBERNETES_SERVICE_HOST and _PORT.
	APIServer string
}

// Container is a running container of a Pod.
type Container struct {
	*proc.Process
	Pod  *corev1.Pod
	Name string
	at   Placement
	spec corev1.Container
}

// Start starts the Pod's containers (not its init containers, which
// steadylb's manifests do not have) as the kubelet would, and fails tb
// where the kubelet would refuse to start them. pod must exist in the API
// server (its UID binds the token) with its status filled in (podIP,
// hostIP). The processes are killed when tb ends.
func (r *Runtime) Start(tb testing.TB, pod *corev1.Pod, at Placement) []*Container {
	tb.Helper()
	if len(pod.Spec.InitContainers) > 0 {
		tb.Fatalf("podproc: pod %s: init containers are not supported", pod.Name)
	}
	if r.clientset == nil {
		cs, err := kubernetes.NewForConfig(r.Env.Config)
		if err != nil {
			tb.Fatalf("podproc: %v", err)
		}
		r.clientset = cs
	}
	dir, err := os.MkdirTemp("", "steadylb-pod-")
	if err != nil {
		tb.Fatalf("podproc: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ctx := tb.Context()
	vols, err := r.volumes(ctx, pod, dir)
	if err != nil {
		tb.Fatalf("podproc: pod %s: %v", pod.Name, err)
	}
	var out []*Container
	for _, c := range pod.Spec.Containers {
		cmd, err := r.command(ctx, pod, c, at, vols, filepath.Join(dir, "root-"+c.Name))
		if err != nil {
			tb.Fatalf("podproc: pod %s container %s: %v", pod.Name, c.Name, err)
		}
		p := proc.Start(tb, cmd[0], cmd[1:]...)
		out = append(out, &Container{Process: p, Pod: pod, Name: c.Name, at: at, spec: c})
	}
	return out
}

// command is the whole command line that starts container c: env -i with
// the container's environment, ip netns exec, unshare --mount, podinit
// with the mounts and the security context, and the image's entrypoint
// with the container's args.
func (r *Runtime) command(ctx context.Context, pod *corev1.Pod, c corev1.Container, at Placement, vols map[string]string, root string) ([]string, error) {
	image, repo, err := r.image(c.Image)
	if err != nil {
		return nil, err
	}
	env, err := r.environment(ctx, pod, c, at)
	if err != nil {
		return nil, err
	}
	sec, err := security(pod, c, image)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	entry := "/" + repo
	mounts := []string{image.Binary + ":" + entry + ":ro"}
	for _, m := range c.VolumeMounts {
		src, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s: no volume of that name", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
		}
		spec := src + ":" + m.MountPath
		if m.ReadOnly {
			spec += ":ro"
		}
		mounts = append(mounts, spec)
	}
	if src, ok := vols[serviceAccountVolume]; ok && !mountsAt(c, serviceAccountPath) {
		mounts = append(mounts, src+":"+serviceAccountPath+":ro")
	}
	argv := append([]string(nil), c.Command...)
	if len(argv) == 0 {
		argv = []string{entry}
	}
	argv = append(argv, c.Args...)
	for _, a := range argv {
		if strings.Contains(a, "$(") {
			return nil, fmt.Errorf("argument %q: $(VAR) expansion is not supported", a)
		}
	}
	tools := map[string]string{}
	for _, t := range []string{"env", "ip", "unshare"} {
		if tools[t], err = exec.LookPath(t); err != nil {
			return nil, fmt.Errorf("needs %s: %w", t, err)
		}
	}
	cmd := append([]string{tools["env"], "-i"}, env...)
	cmd = append(cmd, tools["ip"], "netns", "exec", at.NS.Name, tools["unshare"], "--mount", "--propagation", "private")
	if !pod.Spec.HostNetwork {
		// A Pod off the host network has its own host name, the Pod's.
		cmd = append(cmd, "--uts", r.Podinit, "--hostname", pod.Name)
	} else {
		cmd = append(cmd, r.Podinit)
	}
	cmd = append(cmd, "--root", root, "--uid", strconv.FormatInt(sec.uid, 10), "--gid", strconv.FormatInt(sec.gid, 10),
		"--caps", strings.Join(sec.caps, ","))
	if sec.readOnly {
		cmd = append(cmd, "--read-only")
	}
	if sec.noNewPrivs {
		cmd = append(cmd, "--no-new-privs")
	}
	for _, m := range mounts {
		cmd = append(cmd, "--mount", m)
	}
	return append(append(cmd, "--"), argv...), nil
}

// image finds what plays ref.
func (r *Runtime) image(ref string) (Image, string, error) {
	repo := path.Base(ref)
	if i := strings.IndexAny(repo, ":@"); i >= 0 {
		repo = repo[:i]
	}
	img, ok := r.Images[repo]
	if !ok {
		return Image{}, "", fmt.Errorf("image %s: no binary for %q", ref, repo)
	}
	return img, repo, nil
}

func mountsAt(c corev1.Container, dir string) bool {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == dir {
			return true
		}
	}
	return false
}

// Term sends SIGTERM, as the kubelet does to stop a container. The
// process ID is the container's own: env, ip netns exec, unshare and
// podinit each replace themselves with the next.
func (c *Container) Term() error {
	if err := syscall.Kill(c.Pid(), syscall.SIGTERM); err != nil {
		return fmt.Errorf("podproc: SIGTERM to %s/%s: %w", c.Pod.Name, c.Name, err)
	}
	return nil
}

// Stop sends SIGSTOP (stop true) or SIGCONT, freezing the container as an
// overloaded or paused node would.
func (c *Container) Stop(stop bool) error {
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(c.Pid(), sig); err != nil {
		return fmt.Errorf("podproc: %v to %s/%s: %w", sig, c.Pod.Name, c.Name, err)
	}
	return nil
}

// Running reports whether the process has not exited.
func (c *Container) Running() bool {
	select {
	case <-c.Done:
		return false
	default:
		return true
	}
}

// ProbeURL is the URL of the container's readiness probe (liveness when
// readiness is false), as the kubelet would call it: the Pod's IP (or the
// loopback for a Pod without one) and the probe's port, by number or by
// the container port's name.
func (c *Container) ProbeURL(readiness bool) (string, error) {
	probe := c.spec.LivenessProbe
	if readiness {
		probe = c.spec.ReadinessProbe
	}
	if probe == nil || probe.HTTPGet == nil {
		return "", fmt.Errorf("podproc: %s/%s has no HTTP probe", c.Pod.Name, c.Name)
	}
	port := probe.HTTPGet.Port.String()
	if probe.HTTPGet.Port.StrVal != "" {
		port = ""
		for _, p := range c.spec.Ports {
			if p.Name == probe.HTTPGet.Port.StrVal {
				port = strconv.Itoa(int(p.ContainerPort))
			}
		}
		if port == "" {
			return "", fmt.Errorf("podproc: %s/%s: the probe names port %q, which the container does not have", c.Pod.Name, c.Name, probe.HTTPGet.Port.StrVal)
		}
	}
	host := probe.HTTPGet.Host
	if host == "" {
		host = c.Pod.Status.PodIP
	}
	if host == "" {
		host = "127.0.0.1"
	}
	scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + probe.HTTPGet.Path, nil
}
