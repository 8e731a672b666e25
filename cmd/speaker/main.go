// Command speaker announces the addresses the controller assigned: one runs
// on every node (a DaemonSet on the host network), answers ARP/NDP for
// the addresses this node is elected for and advertises over BGP those
// its BGPAdvertisements select. It only parses flags and wires
// the manager; the logic lives in internal/speaker.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/fixedmapper"
	"github.com/steadylb/steadylb/internal/speaker"
)

// flags are MetalLB's speaker flags where they overlap, each falling back
// to MetalLB's environment variable, so its DaemonSet settings carry over.
type flags struct {
	namespace, nodeName, host, lbClass, logLevel string
	metricsAddr, probeAddr, pprofAddr            string
	podName                                      string
	mlBindAddr, mlLabels, mlSecretKeyPath        string
	mlBindPort                                   int
	announceInterval                             time.Duration
	ignoreExcludeLB                              bool
}

// Default ports. Metrics on 7472 and memberlist on 7946 are MetalLB's; the
// probes get the next free one, since the speaker shares the host network.
const (
	defaultMetricsPort = "7472"
	defaultProbePort   = "7474"
	defaultMLPort      = 7946
)

// parseFlags reads the flags from args into fs; env looks up the
// environment fallbacks.
func parseFlags(fs *flag.FlagSet, args []string, env func(string) string) (flags, error) {
	or := func(name, fallback string) string {
		if v := env(name); v != "" {
			return v
		}
		return fallback
	}
	var f flags
	fs.StringVar(&f.namespace, "namespace", or("METALLB_NAMESPACE", "metallb-system"),
		"namespace of the configuration, the speaker Pods and the ServiceL2Status objects (env METALLB_NAMESPACE)")
	fs.StringVar(&f.nodeName, "node-name", or("METALLB_NODE_NAME", ""), "name of this node (env METALLB_NODE_NAME)")
	fs.StringVar(&f.host, "host", or("METALLB_HOST", ""), "this node's address; the metrics and probes listen on it (env METALLB_HOST)")
	fs.StringVar(&f.podName, "pod-name", or("METALLB_POD_NAME", ""),
		"this speaker's Pod, the owner of its ServiceL2Status objects (env METALLB_POD_NAME; empty: no owner)")
	fs.StringVar(&f.lbClass, "lb-class", "", "announce only Services with this spec.loadBalancerClass (empty: only Services without one)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "", "address of the metrics endpoint (default <host>:"+defaultMetricsPort+"; 0 disables it)")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address of Go's profiling endpoints, /debug/pprof (empty: off)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", "", "address of the health and readiness endpoints (default <host>:"+defaultProbePort+")")
	fs.StringVar(&f.mlBindAddr, "ml-bindaddr", or("METALLB_ML_BIND_ADDR", ""), "address the membership listens on (env METALLB_ML_BIND_ADDR)")
	fs.StringVar(&f.mlLabels, "ml-labels", or("METALLB_ML_LABELS", "app=metallb,component=speaker"),
		"labels of the speaker Pods whose IPs are joined to the membership (env METALLB_ML_LABELS)")
	fs.StringVar(&f.mlSecretKeyPath, "ml-secret-key-path", or("METALLB_ML_SECRET_KEY_PATH", ""),
		"the memberlist Secret mounted as a directory (its key secretkey), or that file; empty: no encryption (env METALLB_ML_SECRET_KEY_PATH)")
	port := defaultMLPort
	if v := env("METALLB_ML_BIND_PORT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return f, fmt.Errorf("METALLB_ML_BIND_PORT=%q: %w", v, err)
		}
		port = n
	}
	fs.IntVar(&f.mlBindPort, "ml-bindport", port, "port of the membership, TCP and UDP; 0 runs without one, as a single node (env METALLB_ML_BIND_PORT)")
	fs.BoolVar(&f.ignoreExcludeLB, "ignore-exclude-lb", false,
		"announce from nodes labelled node.kubernetes.io/exclude-from-external-load-balancers too (MetalLB's flag)")
	fs.DurationVar(&f.announceInterval, "announce-interval", 0, "repeat gratuitous ARP / unsolicited NA this often for every announced address (0: only on takeover)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.nodeName == "" {
		return f, fmt.Errorf("--node-name (or METALLB_NODE_NAME) is required")
	}
	if f.metricsAddr == "" {
		f.metricsAddr = net.JoinHostPort(f.host, defaultMetricsPort)
	}
	if f.probeAddr == "" {
		f.probeAddr = net.JoinHostPort(f.host, defaultProbePort)
	}
	return f, nil
}

// gcPercent is the speaker's GOGC unless the environment sets one. A
// speaker runs on every node and its live heap is small (caches trimmed to
// what it reads); with Go's default of 100 the peak resident set is about
// twice that heap, and half of it garbage. 50 makes it 1.5 times, for a
// little more CPU spent collecting, which the speaker has to spare.
const gcPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	// flag.CommandLine also carries controller-runtime's --kubeconfig.
	f, err := parseFlags(flag.CommandLine, os.Args[1:], os.Getenv)
	if err == nil {
		err = run(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "speaker:", err)
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
	log := ctrl.Log.WithName("setup")
	peers, err := labels.Parse(f.mlLabels)
	if err != nil {
		return fmt.Errorf("--ml-labels: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	// Before the manager, which takes the probe address when it is made.
	key, err := waitForKey(ctx, log, f.mlSecretKeyPath, f.probeAddr)
	if ctx.Err() != nil {
		log.Info("stopped while waiting for the memberlist key")
		return nil
	}
	if err != nil {
		return err
	}
	if key == nil && f.mlBindPort != 0 {
		log.Info("the membership is not encrypted: no memberlist key is configured (--ml-secret-key-path)")
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme, v1beta2.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// A failover writes one ServiceL2Status per Service that moves here
	// before answering for it, so no client-side rate limit: controller-
	// runtime leaves it off (QPS -1) and the API server's priority and
	// fairness protects it. No gzip either: it costs both ends CPU on every
	// watch event of the cluster-wide caches and saves nothing worth it.
	cfg.DisableCompression = true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		PprofBindAddress:       f.pprofAddr,
		Cache:                  speaker.CacheOptions(f.namespace, f.nodeName, peers),
		// Every read of a kind cached in one namespace asks the mapper
		// whether the kind is namespaced (fixedmapper says why).
		MapperProvider: fixedmapper.Provider,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	announcer := newAnnouncer(ctrl.Log.WithName("layer2"), f, ctrlmetrics.Registry)
	members, err := newMembership(ctrl.Log.WithName("membership"), f, key, ctrlmetrics.Registry, announcer.Announcer)
	if err != nil {
		return err
	}
	// Whatever way run ends, memberlist stops; after a leave this does
	// nothing.
	defer members.shutdown()
	if key != nil && members.useKey != nil {
		w := &keyWatcher{log: ctrl.Log.WithName("membership"), path: f.mlSecretKeyPath, inUse: key, use: members.useKey}
		if err := mgr.Add(w); err != nil {
			return fmt.Errorf("add the memberlist key watcher: %w", err)
		}
	}
	// The shutdown order (stopThenLeave says why): stop answering, leave,
	// then delete the ServiceL2Status objects.
	if err := mgr.Add(stopThenLeave{announcer: announcer.Announcer, leave: members.leave}); err != nil {
		return fmt.Errorf("add announcer: %w", err)
	}
	// The Router asks the speaker, once it is set up, whether a stop is a
	// departure; the manager starts neither before both exist.
	var spk *speaker.Speaker
	router, err := newRouter(ctrl.Log.WithName("bgp"), f, ctrlmetrics.Registry, func(ctx context.Context) bool {
		return spk != nil && spk.Departing(ctx)
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(router); err != nil {
		return fmt.Errorf("add BGP sessions: %w", err)
	}
	spk, err = speaker.Setup(mgr, speaker.Options{
		NodeName: f.nodeName, Namespace: f.namespace, LBClass: f.lbClass, PodName: f.podName, IgnoreExcludeLB: f.ignoreExcludeLB,
		Announcer: announcer.Announcer, Membership: members.members, PeerSelector: peers, PeerPort: f.mlBindPort,
		Stopped: members.leave, InterfacesChanged: announcer.interfacesChanged, LinkReturned: announcer.linkReturned,
		InterfaceExclusions: announcer.SetExcluded,
		Router:              router,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	return mgr.Start(ctx)
}
