package podproc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/test/kubeletvol"
)

// The service account volume the kubelet adds to every Pod that does not
// opt out, and where it mounts it.
const (
	serviceAccountVolume = "kube-api-access"
	serviceAccountPath   = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenSeconds is the kubelet's default token lifetime (an hour and
	// a few seconds, so it can be told apart).
	tokenSeconds = 3607
)

// volumes writes every volume of the Pod under dir and returns their
// directories by volume name.
func (r *Runtime) volumes(ctx context.Context, pod *corev1.Pod, dir string) (map[string]string, error) {
	out := map[string]string{}
	written := map[string]map[string]file{}
	for _, v := range pod.Spec.Volumes {
		files, mode, err := r.volumeFiles(ctx, pod, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		path := filepath.Join(dir, "volumes", v.Name)
		if files == nil { // an emptyDir
			if err := os.MkdirAll(path, 0o777); err != nil {
				return nil, err
			}
		} else if err := kubeletvol.Write(path, files, mode); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		out[v.Name] = path
		written[v.Name] = files
	}
	if r.RefreshEvery > 0 {
		go r.refresh(ctx, pod, out, written)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		files, err := r.serviceAccountFiles(ctx, pod)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "volumes", serviceAccountVolume)
		if err := kubeletvol.Write(path, files, 0o644); err != nil {
			return nil, err
		}
		out[serviceAccountVolume] = path
	}
	return out, nil
}

// file is one file of a volume: its content and mode (0 for the volume's).
type file = kubeletvol.File

// volumeFiles reads what a volume holds; nil files (no error) for an
// emptyDir.
func (r *Runtime) volumeFiles(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (map[string]file, os.FileMode, error) {
	mode := func(m *int32) os.FileMode {
		if m == nil {
			return 0o644
		}
		return os.FileMode(*m)
	}
	switch {
	case v.EmptyDir != nil:
		return nil, 0, nil
	case v.Secret != nil:
		s, err := r.clientset.CoreV1().Secrets(pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			if err := optional(v.Secret.Optional, err); err != nil {
				return nil, 0, fmt.Errorf("secret %s: %w", v.Secret.SecretName, err)
			}
			return map[string]file{}, mode(v.Secret.DefaultMode), nil
		}
		files, err := project(s.Data, v.Secret.Items)
		return files, mode(v.Secret.DefaultMode), err
	case v.ConfigMap != nil:
		cm, err := r.clientset.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			if err := optional(v.ConfigMap.Optional, err); err != nil {
				return nil, 0, fmt.Errorf("configmap %s: %w", v.ConfigMap.Name, err)
			}
			return map[string]file{}, mode(v.ConfigMap.DefaultMode), nil
		}
		data := map[string][]byte{}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		for k, b := range cm.BinaryData {
			data[k] = b
		}
		files, err := project(data, v.ConfigMap.Items)
		return files, mode(v.ConfigMap.DefaultMode), err
	}
	return nil, 0, fmt.Errorf("only secret, configMap and emptyDir volumes are supported")
}

// project picks the keys a volume's items name (all when none), with
// their paths and modes.
func project(data map[string][]byte, items []corev1.KeyToPath) (map[string]file, error) {
	files := map[string]file{}
	if len(items) == 0 {
		for k, b := range data {
			files[k] = file{Data: b}
		}
		return files, nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("no key %q", it.Key)
		}
		f := file{Data: b}
		if it.Mode != nil {
			f.Mode = os.FileMode(*it.Mode)
		}
		files[it.Path] = f
	}
	return files, nil
}

// serviceAccountFiles are the token (a TokenRequest bound to the Pod, as
// the kubelet asks for it), the cluster's CA and the Pod's namespace.
func (r *Runtime) serviceAccountFiles(ctx context.Context, pod *corev1.Pod) (map[string]file, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	seconds := int64(tokenSeconds)
	tr, err := r.clientset.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return map[string]file{
		"token":     {Data: []byte(tr.Status.Token)},
		"ca.crt":    {Data: r.Env.Config.CAData},
		"namespace": {Data: []byte(pod.Namespace)},
	}, nil
}

// refresh rewrites the Secret and ConfigMap volumes whose content changed,
// every RefreshEvery until ctx ends, as the kubelet's periodic sync does.
func (r *Runtime) refresh(ctx context.Context, pod *corev1.Pod, dirs map[string]string, last map[string]map[string]file) {
	tick := time.NewTicker(r.RefreshEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, v := range pod.Spec.Volumes {
			if v.Secret == nil && v.ConfigMap == nil {
				continue
			}
			files, mode, err := r.volumeFiles(ctx, pod, v)
			if err != nil || sameFiles(files, last[v.Name]) {
				continue // unreadable for now, or unchanged
			}
			if err := kubeletvol.Write(dirs[v.Name], files, mode); err == nil {
				last[v.Name] = files
			}
		}
	}
}

func sameFiles(a, b map[string]file) bool {
	if len(a) != len(b) {
		return false
	}
	for k, f := range a {
		g, ok := b[k]
		if !ok || string(f.Data) != string(g.Data) || f.Mode != g.Mode {
			return false
		}
	}
	return true
}
