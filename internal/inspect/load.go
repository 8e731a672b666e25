package inspect

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/controller"
)

// ErrNoCRDs means the cluster does not serve the metallb.io kinds.
var ErrNoCRDs = errors.New("the metallb.io CRDs are not installed")

// Source says where the configuration lives and which Services the
// controller serves: its --namespace and --lb-class flags.
type Source struct {
	Namespace string
	LBClass   string
}

// Load lists what the controller decides from: the pools of the
// controller's namespace, every Service, every Namespace and every
// AddressReservation, one LIST each, all four at once: the Service LIST is
// the long one, and the others ride along with it rather than after it.
// Errors name the kind that could not be listed and why (the first of
// pools, Services, Namespaces that failed). The AddressReservations are
// optional: a cluster MetalLB serves has no such CRD, and a user may not
// be allowed to list them; notes then says that they were left out.
func Load(ctx context.Context, c client.Reader, src Source) (cl controller.Cluster, notes []string, err error) {
	var (
		pools   v1beta1.IPAddressPoolList
		svcs    corev1.ServiceList
		nss     corev1.NamespaceList
		res     v1alpha1.AddressReservationList
		errs    [4]error
		pending sync.WaitGroup
	)
	pending.Go(func() { errs[0] = c.List(ctx, &pools, client.InNamespace(src.Namespace)) })
	pending.Go(func() { errs[1] = c.List(ctx, &svcs) })
	pending.Go(func() { errs[2] = c.List(ctx, &nss) })
	pending.Go(func() { errs[3] = c.List(ctx, &res) })
	pending.Wait()
	cl = controller.Cluster{LBClass: src.LBClass}
	switch {
	case errs[0] != nil:
		return cl, nil, listError("ipaddresspools.metallb.io", "in namespace "+src.Namespace, errs[0])
	case errs[1] != nil:
		return cl, nil, listError("services", "in all namespaces", errs[1])
	case errs[2] != nil:
		return cl, nil, listError("namespaces", "", errs[2])
	}
	cl.Pools, cl.Services, cl.Namespaces = pools.Items, svcs.Items, nss.Items
	switch err := errs[3]; {
	case err == nil:
		cl.Reservations = res.Items
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		notes = append(notes, "note: the API server does not know addressreservations.steadylb.io; "+
			"answering without reservations")
	case apierrors.IsForbidden(err):
		notes = append(notes, "note: not allowed to list addressreservations.steadylb.io in all namespaces; "+
			"answering without reservations, so reserved addresses show as free")
	default:
		return cl, nil, fmt.Errorf("list addressreservations.steadylb.io in all namespaces: %w", err)
	}
	return cl, notes, nil
}

func listError(resource, where string, err error) error {
	if where != "" {
		where = " " + where
	}
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the API server does not know %s; install them with `kubectl apply -k config/crd`: %v",
			ErrNoCRDs, resource, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to list %s%s: the plugin needs list on IPAddressPools, Services and Namespaces: %w",
			resource, where, err)
	}
	return fmt.Errorf("list %s%s: %w", resource, where, err)
}
