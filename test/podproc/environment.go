package podproc

import (
	"context"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// imagePath is the PATH of a distroless image, which the kubelet passes
// from the image's configuration.
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// environment is the container's environment as KEY=VALUE, in the order
// the kubelet builds it: the API server's variables, then the container's
// own (which win).
func (r *Runtime) environment(ctx context.Context, pod *corev1.Pod, c corev1.Container, at Placement) ([]string, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom is not supported")
	}
	host, port, err := net.SplitHostPort(at.APIServer)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", at.APIServer, err)
	}
	hostname := pod.Name
	if pod.Spec.HostNetwork {
		hostname = pod.Spec.NodeName
	}
	vars := [][2]string{
		{"PATH", imagePath}, {"HOSTNAME", hostname},
		{"KUBERNETES_SERVICE_HOST", host}, {"KUBERNETES_SERVICE_PORT", port}, {"KUBERNETES_SERVICE_PORT_HTTPS", port},
		{"KUBERNETES_PORT", "tcp://" + at.APIServer},
	}
	for _, e := range c.Env {
		v, err := r.value(ctx, pod, e)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		vars = append(vars, [2]string{e.Name, v})
	}
	// A later variable of the same name replaces an earlier one, in place.
	index := map[string]int{}
	var out []string
	for _, kv := range vars {
		if strings.Contains(kv[1], "$(") {
			return nil, fmt.Errorf("env %s: $(VAR) expansion is not supported", kv[0])
		}
		if i, ok := index[kv[0]]; ok {
			out[i] = kv[0] + "=" + kv[1]
			continue
		}
		index[kv[0]] = len(out)
		out = append(out, kv[0]+"="+kv[1])
	}
	return out, nil
}

// value resolves one variable.
func (r *Runtime) value(ctx context.Context, pod *corev1.Pod, e corev1.EnvVar) (string, error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return e.Value, nil
	case from.FieldRef != nil:
		return fieldValue(pod, from.FieldRef.FieldPath)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := r.clientset.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", optional(ref.Optional, fmt.Errorf("secret %s: %w", ref.Name, err))
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", optional(ref.Optional, fmt.Errorf("secret %s has no key %q", ref.Name, ref.Key))
		}
		return string(v), nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := r.clientset.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", optional(ref.Optional, fmt.Errorf("configmap %s: %w", ref.Name, err))
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", optional(ref.Optional, fmt.Errorf("configmap %s has no key %q", ref.Name, ref.Key))
		}
		return v, nil
	}
	return "", fmt.Errorf("only value, fieldRef, secretKeyRef and configMapKeyRef are supported")
}

// optional swallows err for an optional reference, whose variable is then
// empty, as the kubelet does.
func optional(opt *bool, err error) error {
	if opt != nil && *opt {
		return nil
	}
	return err
}

// fieldValue is a downward-API field of the Pod.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	ips := func(list []corev1.PodIP) string {
		var s []string
		for _, ip := range list {
			s = append(s, ip.IP)
		}
		return strings.Join(s, ",")
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		return ips(pod.Status.PodIPs), nil
	case "status.hostIPs":
		var s []string
		for _, ip := range pod.Status.HostIPs {
			s = append(s, ip.IP)
		}
		return strings.Join(s, ","), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("field %q is not supported", path)
}
