package inspect

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/inspect/servicelist"
)

// ErrNoCRDs means the cluster does not serve the metallb.io kinds.
var ErrNoCRDs = errors.New("the metallb.io CRDs are not installed")

// Source says where the configuration lives and which Services the
// controller serves: its --namespace and --lb-class flags.
type Source struct {
	Namespace string
	LBClass   string
}

// Clients are what Load lists with: a reader for the small kinds, and a
// REST client of the core/v1 API, in protobuf, for the Services, which
// Load decodes as they arrive.
type Clients struct {
	Reader client.Reader
	Core   rest.Interface
}

// Connect makes the clients for an API server. Both share one HTTP client,
// so one connection carries every LIST.
func Connect(cfg *rest.Config) (Clients, error) {
	s := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(s), v1beta1.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		return Clients{}, fmt.Errorf("build scheme: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("connect to the API server: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s, Mapper: staticMapper(), HTTPClient: hc})
	if err != nil {
		return Clients{}, fmt.Errorf("connect to the API server: %w", err)
	}
	core := rest.CopyConfig(cfg)
	core.APIPath, core.GroupVersion = "/api", &corev1.SchemeGroupVersion
	core.ContentType = runtime.ContentTypeProtobuf
	core.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(core, hc)
	if err != nil {
		return Clients{}, fmt.Errorf("connect to the API server: %w", err)
	}
	return Clients{Reader: c, Core: rc}, nil
}

// staticMapper maps the kinds Load lists to their resources without
// asking the API server: discovery would cost requests in series before
// the first LIST, and the kinds are fixed. A kind the API server does not
// serve (a cluster without steadylb's CRDs) then answers its LIST with
// NotFound, which Load reports as it reports a missing discovery entry.
func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	m.Add(v1beta1.GroupVersion.WithKind("IPAddressPool"), meta.RESTScopeNamespace)
	m.Add(v1alpha1.GroupVersion.WithKind("AddressReservation"), meta.RESTScopeNamespace)
	return m
}

// Load lists what the controller decides from: the pools of the
// controller's namespace, every Service, every Namespace and every
// AddressReservation, one LIST each, all four at once: the Service LIST is
// the long one, and the others ride along with it rather than after it.
// Errors name the kind that could not be listed and why (the first of
// pools, Services, Namespaces that failed). The AddressReservations are
// optional: a cluster MetalLB serves has no such CRD, and a user may not
// be allowed to list them; notes then says that they were left out.
func Load(ctx context.Context, c Clients, src Source) (cl assign.Cluster, notes []string, err error) {
	var (
		pools   v1beta1.IPAddressPoolList
		svcs    []corev1.Service
		nss     corev1.NamespaceList
		res     v1alpha1.AddressReservationList
		errs    [4]error
		pending sync.WaitGroup
	)
	pending.Go(func() { errs[0] = c.Reader.List(ctx, &pools, client.InNamespace(src.Namespace)) })
	pending.Go(func() { svcs, errs[1] = servicelist.List(ctx, c.Core) })
	pending.Go(func() { errs[2] = c.Reader.List(ctx, &nss) })
	pending.Go(func() { errs[3] = c.Reader.List(ctx, &res) })
	pending.Wait()
	cl = assign.Cluster{LBClass: src.LBClass}
	switch {
	case errs[0] != nil:
		return cl, nil, listError("ipaddresspools.metallb.io", "in namespace "+src.Namespace, errs[0])
	case errs[1] != nil:
		return cl, nil, listError("services", "in all namespaces", errs[1])
	case errs[2] != nil:
		return cl, nil, listError("namespaces", "", errs[2])
	}
	cl.Pools, cl.Services, cl.Namespaces = pools.Items, svcs, nss.Items
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
