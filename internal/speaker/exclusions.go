package speaker

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/speaker/excludel2"
)

// reloadExclusions reads MetalLB's interface exclusion ConfigMap and
// hands its patterns to Options.InterfaceExclusions. A missing ConfigMap
// or key excludes nothing. Entries that do not compile are left out and
// reported on the ConfigurationState; a document that cannot be read
// keeps the patterns in use (dropping them could open responders on
// interfaces the operator excluded) and is reported too. It reports
// whether the patterns in use changed.
func (s *Speaker) reloadExclusions(ctx context.Context) (bool, error) {
	cm := &corev1.ConfigMap{}
	err := s.cache.Get(ctx, types.NamespacedName{Namespace: s.opts.Namespace, Name: excludel2.ConfigMapName}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get ConfigMap %s: %w", excludel2.ConfigMapName, err)
	}
	var data string
	if err == nil {
		data = cm.Data[excludel2.Key]
	}
	patterns, bad, err := excludel2.Parse(data)
	s.excludeProblems = nil
	if err != nil {
		s.log.Info("interface exclusions cannot be read; keeping the ones in use", "error", err.Error())
		s.excludeProblems = []string{err.Error()}
		return false, nil
	}
	for _, b := range bad {
		s.log.Info("interface exclusion entry left out", "error", b.Error())
		s.excludeProblems = append(s.excludeProblems, b.Error())
	}
	next := make([]string, len(patterns))
	for i, re := range patterns {
		next[i] = re.String()
	}
	if s.excludeLoaded && slices.Equal(next, s.excluded) {
		return false, nil
	}
	s.excludeLoaded, s.excluded = true, next
	s.log.Info("interface exclusions loaded", "patterns", next)
	if s.opts.InterfaceExclusions != nil {
		s.opts.InterfaceExclusions(patterns)
	}
	return true, nil
}
