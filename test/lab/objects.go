package lab

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SpeakerLabels are the labels of the speaker Pods, the speakers'
// default --ml-labels.
var SpeakerLabels = map[string]string{"app": "metallb", "component": "speaker"}

// createObjects writes a Node and a speaker Pod for every node: what a
// kubelet would have registered and reported.
func (l *Lab) createObjects(ctx context.Context) error {
	c := l.opts.Env.Client
	for _, n := range l.Nodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{corev1.LabelHostname: n.Name}},
			Spec: corev1.NodeSpec{
				PodCIDR:  n.PodCIDR4().String(),
				PodCIDRs: []string{n.PodCIDR4().String(), n.PodCIDR6().String()},
			},
		}
		if err := c.Create(ctx, node); err != nil {
			return fmt.Errorf("lab: create node %s: %w", n.Name, err)
		}
		l.undo = append(l.undo, func() error { return ignoreNotFound(c.Delete(context.Background(), node)) })

		pod := speakerPod(l.opts.Namespace, n)
		status := pod.Status
		if err := c.Create(ctx, pod); err != nil {
			return fmt.Errorf("lab: create pod %s: %w", pod.Name, err)
		}
		l.undo = append(l.undo, func() error {
			return ignoreNotFound(c.Delete(context.Background(), pod, client.GracePeriodSeconds(0)))
		})
		pod.Status = status
		if err := c.Status().Update(ctx, pod); err != nil {
			return fmt.Errorf("lab: set the status of pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// speakerPod is n's speaker Pod as a running DaemonSet Pod on the host
// network would look: its IPs are the node's.
func speakerPod(namespace string, n *Node) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: n.PodName(), Namespace: namespace, Labels: SpeakerLabels},
		Spec: corev1.PodSpec{
			NodeName:    n.Name,
			HostNetwork: true,
			Containers:  []corev1.Container{{Name: "speaker", Image: "steadylb/speaker:lab"}},
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: n.IPv4.String(),
			PodIP:  n.IPv4.String(),
			PodIPs: []corev1.PodIP{{IP: n.IPv4.String()}, {IP: n.IPv6.String()}},
		},
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func jsonMarshal(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("lab: encode patch: %w", err)
	}
	return data, nil
}
