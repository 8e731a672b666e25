package configprint

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
)

// Objects fingerprints the configuration objects of snap, whatever their
// order. The password Secrets are not in it: their reader says when they
// changed.
func Objects(snap config.Snapshot) string {
	var parts []string
	for _, items := range [][]metav1.Object{metas(snap.Pools), metas(snap.L2Advertisements), metas(snap.BGPAdvertisements),
		metas(snap.Peers), metas(snap.BFDProfiles), metas(snap.Communities)} {
		for _, m := range items {
			parts = append(parts, objectPrint(m))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

func metas[T any, P interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// objectPrint names an object's kind, name, UID, generation and labels.
func objectPrint(m metav1.Object) string {
	return fmt.Sprintf("%T/%s/%s/%d/%s", m, m.GetName(), m.GetUID(), m.GetGeneration(), labels.Set(m.GetLabels()).String())
}
