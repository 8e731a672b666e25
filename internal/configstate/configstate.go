// Package configstate writes the ConfigurationState objects in which the
// controller and each speaker report whether their configuration is valid
// (MetalLB's kind, one object per component). Both create the object when
// it is missing and then merge-patch only the verdict into its status, so
// a write never rests on the reader's copy being current: a cache that
// has not seen the last write yet must not decide what the next one is.
package configstate

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// GetOrCreate reads the ConfigurationState key through r and, when r has
// none, creates it with labels through w and returns the new, empty one.
// An object r has not seen yet but the API server has is left as it is.
func GetOrCreate(ctx context.Context, r client.Reader, w client.Writer, key types.NamespacedName,
	labels map[string]string) (*v1beta1.ConfigurationState, error) {
	state := &v1beta1.ConfigurationState{}
	err := r.Get(ctx, key, state)
	if apierrors.IsNotFound(err) {
		state = &v1beta1.ConfigurationState{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: labels}}
		err = client.IgnoreAlreadyExists(w.Create(ctx, state))
	}
	if err != nil {
		return nil, fmt.Errorf("get or create ConfigurationState %s: %w", key, err)
	}
	return state, nil
}

// Same reports whether two statuses hold the same verdict (result and
// error summary; conditions are not the verdict).
func Same(a, b v1beta1.ConfigurationStateStatus) bool {
	return a.Result == b.Result && a.ErrorSummary == b.ErrorSummary
}

// Patch merge-patches the verdict (result and error summary) of want into
// the status of the ConfigurationState key, leaving its conditions alone.
func Patch(ctx context.Context, c client.StatusClient, key types.NamespacedName, want v1beta1.ConfigurationStateStatus) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"result": want.Result, "errorSummary": want.ErrorSummary}})
	if err != nil {
		return fmt.Errorf("update ConfigurationState %s: %w", key, err)
	}
	target := &v1beta1.ConfigurationState{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	if err := c.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("update ConfigurationState %s: %w", key, err)
	}
	return nil
}
