package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

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

// Clients are what Load lists with, one REST client per API group: the
// core/v1 API in protobuf, for the Services, which Load decodes as they
// arrive, and the Namespaces; metallb.io/v1beta1 for the IPAddressPools
// and steadylb.io/v1alpha1 for the AddressReservations, in JSON (the API
// server serves custom resources in no other form).
type Clients struct {
	Core     rest.Interface
	MetalLB  rest.Interface
	SteadyLB rest.Interface
}

// Connect makes the clients for an API server. They share one HTTP
// client, its transport and its connections. Each knows its resources'
// paths: nothing is discovered before the first LIST, and a kind the API
// server does not serve (a cluster without steadylb's CRDs) answers its
// LIST with NotFound.
func Connect(cfg *rest.Config) (Clients, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("connect to the API server: %w", err)
	}
	crds := runtime.NewScheme()
	if err := errors.Join(v1beta1.AddToScheme(crds), v1alpha1.AddToScheme(crds)); err != nil {
		return Clients{}, fmt.Errorf("build scheme: %w", err)
	}
	crdCodecs := serializer.NewCodecFactory(crds).WithoutConversion()
	var c Clients
	if c.Core, err = restClient(cfg, hc, corev1.SchemeGroupVersion, runtime.ContentTypeProtobuf, scheme.Codecs.WithoutConversion()); err != nil {
		return Clients{}, err
	}
	if c.MetalLB, err = restClient(cfg, hc, v1beta1.GroupVersion, runtime.ContentTypeJSON, crdCodecs); err != nil {
		return Clients{}, err
	}
	if c.SteadyLB, err = restClient(cfg, hc, v1alpha1.GroupVersion, runtime.ContentTypeJSON, crdCodecs); err != nil {
		return Clients{}, err
	}
	return c, nil
}

// restClient makes the REST client of one API group version over the
// shared HTTP client.
func restClient(cfg *rest.Config, hc *http.Client, gv schema.GroupVersion, contentType string,
	codecs runtime.NegotiatedSerializer) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.GroupVersion, c.ContentType, c.NegotiatedSerializer = &gv, contentType, codecs
	rc, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("connect to the API server for %s: %w", gv, err)
	}
	return rc, nil
}

// Load lists what the controller decides from: the pools of the
// controller's namespace, every Service, every Namespace and every
// AddressReservation, one LIST each: the Service LIST is the long one,
// and the others ride along with it rather than after it. They start once
// the Service LIST has its connection and share it (HTTP/2): started
// together before any connection is up, each would dial its own, and the
// API server would make four TLS handshakes just as it starts on the long
// LIST (3 ms later to the last Service, in 55 paired runs; BENCHMARKS.md).
// Errors name the kind that could not be listed and why (the first of
// pools, Services, Namespaces that failed). The AddressReservations are
// optional: a cluster MetalLB serves has no such CRD, and a user may not
// be allowed to list them; notes then says that they were left out.
//
// While the Service LIST arrives, the Services go to an assign.Prerestore
// (the replay's restore, made as they come) as soon as the pools and the
// Namespaces are in: the cluster returned carries it.
func Load(ctx context.Context, c Clients, src Source) (cl assign.Cluster, notes []string, err error) {
	var (
		pools   v1beta1.IPAddressPoolList
		svcs    []corev1.Service
		nss     corev1.NamespaceList
		res     v1alpha1.AddressReservationList
		errs    [4]error
		pending sync.WaitGroup
	)
	pre := startPrerestore(src.LBClass)
	connected := make(chan struct{})
	var connectedOnce sync.Once
	markConnected := func() { connectedOnce.Do(func() { close(connected) }) }
	traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { markConnected() }})
	pending.Go(func() {
		defer markConnected() // never connected: the others dial their own
		svcs, errs[1] = servicelist.List(traced, c.Core, pre.add)
		pre.listed()
	})
	<-connected
	pending.Go(func() {
		errs[0] = c.MetalLB.Get().Namespace(src.Namespace).Resource("ipaddresspools").Do(ctx).Into(&pools)
		pre.setPools(pools.Items, errs[0])
	})
	pending.Go(func() {
		errs[2] = c.Core.Get().Resource("namespaces").Do(ctx).Into(&nss)
		pre.setNamespaces(nss.Items, errs[2])
	})
	pending.Go(func() { errs[3] = c.SteadyLB.Get().Resource("addressreservations").Do(ctx).Into(&res) })
	pending.Wait()
	cl = assign.Cluster{LBClass: src.LBClass, Prerestored: pre.result()}
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
	case apierrors.IsNotFound(err):
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
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: the API server does not know %s; install them with `kubectl apply -k config/crd`: %v",
			ErrNoCRDs, resource, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to list %s%s: the plugin needs list on IPAddressPools, Services and Namespaces: %w",
			resource, where, err)
	}
	return fmt.Errorf("list %s%s: %w", resource, where, err)
}
