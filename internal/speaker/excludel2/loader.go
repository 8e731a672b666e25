package excludel2

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Loader keeps one speaker's interface exclusions in step with the
// ConfigMap: the patterns in use and what is wrong with the ConfigMap.
// It is not safe for concurrent use; the speaker's rounds call it one at
// a time.
type Loader struct {
	reader client.Reader
	key    types.NamespacedName
	log    logr.Logger
	// apply, when set, is given the patterns in use each time they change
	// (the Announcer's SetExcluded).
	apply func([]*regexp.Regexp)

	// inUse are the patterns in use, once loaded.
	inUse    []string
	loaded   bool
	problems []string
}

// NewLoader returns a Loader reading ConfigMapName in namespace through
// reader (the speaker's cache, narrowed to that one ConfigMap). apply may
// be nil: the exclusions are then read and reported, not applied.
func NewLoader(reader client.Reader, namespace string, log logr.Logger, apply func([]*regexp.Regexp)) *Loader {
	return &Loader{reader: reader, key: types.NamespacedName{Namespace: namespace, Name: ConfigMapName}, log: log, apply: apply}
}

// Reload reads the ConfigMap and hands its patterns to apply. A missing
// ConfigMap or key excludes nothing. Entries that do not compile are left
// out and reported by Problems; a document that cannot be read keeps the
// patterns in use (dropping them could open responders on interfaces the
// operator excluded) and is reported too. It reports whether the patterns
// in use changed; an error is a failed read, to be retried.
func (l *Loader) Reload(ctx context.Context) (bool, error) {
	cm := &corev1.ConfigMap{}
	err := l.reader.Get(ctx, l.key, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get ConfigMap %s: %w", ConfigMapName, err)
	}
	var data string
	if err == nil {
		data = cm.Data[Key]
	}
	patterns, bad, err := Parse(data)
	l.problems = nil
	if err != nil {
		l.log.Info("interface exclusions cannot be read; keeping the ones in use", "error", err.Error())
		l.problems = []string{err.Error()}
		return false, nil
	}
	for _, b := range bad {
		l.log.Info("interface exclusion entry left out", "error", b.Error())
		l.problems = append(l.problems, b.Error())
	}
	next := make([]string, len(patterns))
	for i, re := range patterns {
		next[i] = re.String()
	}
	if l.loaded && slices.Equal(next, l.inUse) {
		return false, nil
	}
	l.loaded, l.inUse = true, next
	l.log.Info("interface exclusions loaded", "patterns", next)
	if l.apply != nil {
		l.apply(patterns)
	}
	return true, nil
}

// Problems says what is wrong with the ConfigMap as last read, one line
// each, for the ConfigurationState; none when it is fine or absent.
func (l *Loader) Problems() []string { return l.problems }
