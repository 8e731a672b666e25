package l2status

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
)

// Field indexes on the cache, so that a lookup costs the number of objects
// found rather than the number of objects in the namespace.
const (
	// IndexService is "namespace/name" of the object's Service.
	IndexService = "l2status.steadylb.io/service"
	// IndexAddress is each address in AnnotationAddresses.
	IndexAddress = "l2status.steadylb.io/address"
)

// AddIndexes registers the field indexes on a cache before it starts.
func AddIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	byService := func(o client.Object) []string {
		st, ok := o.(*v1beta1.ServiceL2Status)
		if !ok {
			return nil
		}
		if svc, ok := ServiceOf(st); ok {
			return []string{svc.String()}
		}
		return nil
	}
	if err := indexer.IndexField(ctx, &v1beta1.ServiceL2Status{}, IndexService, byService); err != nil {
		return fmt.Errorf("index ServiceL2Status by service: %w", err)
	}
	byAddress := func(o client.Object) []string {
		if st, ok := o.(*v1beta1.ServiceL2Status); ok {
			return indexAddresses(st)
		}
		return nil
	}
	if err := indexer.IndexField(ctx, &v1beta1.ServiceL2Status{}, IndexAddress, byAddress); err != nil {
		return fmt.Errorf("index ServiceL2Status by address: %w", err)
	}
	return nil
}

// ForService lists every node's objects for a Service. O(objects found).
func ForService(ctx context.Context, r client.Reader, namespace string, svc types.NamespacedName) ([]v1beta1.ServiceL2Status, error) {
	var list v1beta1.ServiceL2StatusList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{IndexService: svc.String()}); err != nil {
		return nil, fmt.Errorf("list ServiceL2Status of service %s: %w", svc, err)
	}
	return list.Items, nil
}

// ForAddress lists the objects that say they guard addr. O(objects found).
func ForAddress(ctx context.Context, r client.Reader, namespace string, addr netip.Addr) ([]v1beta1.ServiceL2Status, error) {
	var list v1beta1.ServiceL2StatusList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{IndexAddress: addr.String()}); err != nil {
		return nil, fmt.Errorf("list ServiceL2Status of address %s: %w", addr, err)
	}
	return list.Items, nil
}
