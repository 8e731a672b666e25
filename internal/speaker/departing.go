package speaker

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Departing reports whether this node is leaving for good, rather than
// its speaker restarting, when the speaker stops: the BGP sessions then
// close with Cease so the routers withdraw its routes at once, instead of
// keeping them stale for the graceful restart time. The rule (README,
// "Stopping"):
//
//   - leaving: its Node is gone or being deleted, cordoned (as a drain
//     does first), or tainted node.kubernetes.io/out-of-service; or its
//     speaker Pod is being deleted along with its DaemonSet (gone, or
//     being deleted);
//   - restarting: anything else, e.g. a rolling update or a deleted Pod
//     of a DaemonSet that stays, a crash, or an API server that does not
//     answer within ctx (the routes then stay stale for the restart time,
//     as they would after a crash).
//
// It reads the API server directly: the cache keeps neither the Nodes'
// spec nor the Pods' owners, and may be stopping.
func (s *Speaker) Departing(ctx context.Context) bool {
	why, err := s.departure(ctx)
	if err != nil {
		s.log.Error(err, "cannot tell a restart from a departure; treating the stop as a restart")
		return false
	}
	if why == "" {
		return false
	}
	s.log.Info("this node is leaving", "because", why)
	return true
}

// departure says why this node is leaving, or "" when it is not.
func (s *Speaker) departure(ctx context.Context) (string, error) {
	var node corev1.Node
	err := s.apiReader.Get(ctx, types.NamespacedName{Name: s.opts.NodeName}, &node)
	switch {
	case apierrors.IsNotFound(err):
		return "its Node is gone", nil
	case err != nil:
		return "", err
	case node.DeletionTimestamp != nil:
		return "its Node is being deleted", nil
	case node.Spec.Unschedulable:
		return "its Node is cordoned", nil
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			return "its Node is tainted " + t.Key, nil
		}
	}
	if s.opts.PodName == "" {
		return "", nil
	}
	var pod corev1.Pod
	if err := s.apiReader.Get(ctx, types.NamespacedName{Namespace: s.opts.Namespace, Name: s.opts.PodName}, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil // not a Pod we can judge
		}
		return "", err
	}
	owner := metav1.GetControllerOf(&pod)
	if pod.DeletionTimestamp == nil || owner == nil || owner.Kind != "DaemonSet" {
		return "", nil
	}
	var ds appsv1.DaemonSet
	err = s.apiReader.Get(ctx, types.NamespacedName{Namespace: s.opts.Namespace, Name: owner.Name}, &ds)
	switch {
	case apierrors.IsNotFound(err):
		return "its DaemonSet is deleted", nil
	case err != nil:
		return "", err
	case ds.UID == owner.UID && ds.DeletionTimestamp != nil:
		return "its DaemonSet is being deleted", nil
	}
	return "", nil
}
