// Command controller assigns addresses from IPAddressPools to Services of
// type LoadBalancer. It only parses flags and wires the manager; the logic
// lives in internal/controller.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/controller"
	"github.com/steadylb/steadylb/internal/fixedmapper"
	"github.com/steadylb/steadylb/internal/mlsecret"
)

type flags struct {
	namespace, lbClass, logLevel string
	metricsAddr, probeAddr       string
	leaderElect                  bool
	retainFor                    time.Duration
	leaderElectionID             string
	mlSecretName                 string
	// The Lease timings, kube-controller-manager's flag names and defaults.
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.namespace, "namespace", "metallb-system", "namespace of the configuration objects")
	flag.StringVar(&f.lbClass, "lb-class", "", "serve only Services with this spec.loadBalancerClass (empty: only Services without one)")
	flag.DurationVar(&f.retainFor, "retain-for", 0,
		"how long a deleted Service's addresses stay reserved for a Service of the same namespace and name, "+
			"unless its pool's steadylb.io/retain-for annotation says otherwise (0: not at all)")
	flag.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":7472", "address of the metrics endpoint (0 disables it)")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness endpoints")
	flag.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader with a Lease, so that several replicas can run")
	flag.StringVar(&f.leaderElectionID, "leader-election-id", "steadylb-controller", "name of the leader election Lease")
	flag.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"how long a standby waits after the last renewal before it takes the Lease")
	flag.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"how long the leader keeps retrying a renewal before it gives up leadership and exits")
	flag.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"how often candidates try to acquire or renew the Lease")
	flag.StringVar(&f.mlSecretName, "ml-secret-name", os.Getenv("METALLB_ML_SECRET_NAME"),
		"the speakers' memberlist Secret in --namespace: the leader creates it, or gives it a key, when it has none "+
			"(env METALLB_ML_SECRET_NAME; empty: leave it alone)")
	flag.Parse()
	return f
}

func main() {
	if err := run(parseFlags()); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	level, err := zapcore.ParseLevel(f.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// Millisecond timestamps: handovers and failovers take tenths of a second.
	ctrl.SetLogger(zap.New(zap.Level(level), func(o *zap.Options) { o.TimeEncoder = zapcore.ISO8601TimeEncoder }))

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme, v1beta2.AddToScheme,
		v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// Gzip costs the API server and the controller CPU on every watch event
	// and response, and buys nothing between a controller and its API
	// server: the API server's CPU is what bounds allocation.
	cfg.DisableCompression = true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              f.leaderElectionID,
		LeaderElectionNamespace:       f.namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
		// The configuration lives in one namespace: watch only that one, so
		// the controller needs no cluster-wide rights on metallb.io objects.
		Cache: cache.Options{
			// Every Service in the cluster is cached; managedFields are a
			// large share of each and the controller never reads them.
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&v1beta1.IPAddressPool{}:      {Namespaces: map[string]cache.Config{f.namespace: {}}},
				&v1beta1.ConfigurationState{}: {Namespaces: map[string]cache.Config{f.namespace: {}}},
			},
		},
		// Every pool reconcile lists the pools from that one namespace,
		// which asks the mapper whether the kind is namespaced
		// (fixedmapper says why).
		MapperProvider: fixedmapper.Provider,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := controller.Setup(mgr, controller.Options{
		Namespace: f.namespace, LBClass: f.lbClass, LeaderElection: f.leaderElect, RetainFor: f.retainFor,
	}); err != nil {
		return err
	}
	if f.mlSecretName != "" {
		// The API reader, not the cache: one Secret by name, no watch on
		// the namespace's Secrets.
		filler := &mlsecret.Filler{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(),
			Key: types.NamespacedName{Namespace: f.namespace, Name: f.mlSecretName}, Log: ctrl.Log.WithName("memberlist-secret")}
		if err := mgr.Add(filler); err != nil {
			return fmt.Errorf("add the memberlist Secret filler: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
