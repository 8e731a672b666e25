// Command speaker announces the addresses the controller assigned: one runs
// on every node (a DaemonSet on the host network) and answers ARP/NDP for
// the addresses this node is elected for. It only parses flags and wires
// the manager; the logic lives in internal/speaker.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
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
	"github.com/steadylb/steadylb/internal/speaker"
)

// flags are MetalLB's speaker flags where they overlap, each falling back
// to MetalLB's environment variable, so its DaemonSet settings carry over.
type flags struct {
	namespace, nodeName, host, lbClass, logLevel string
	metricsAddr, probeAddr                       string
	podName                                      string
	mlBindAddr, mlLabels, mlSecretKeyPath        string
	mlBindPort                                   int
	announceInterval                             time.Duration
}

// Default ports. Metrics on 7472 and memberlist on 7946 are MetalLB's; the
// probes get the next free one, since the speaker shares the host network.
const (
	defaultMetricsPort = "7472"
	defaultProbePort   = "7474"
	defaultMLPort      = 7946
)

func parseFlags() (flags, error) {
	var f flags
	flag.StringVar(&f.namespace, "namespace", env("METALLB_NAMESPACE", "metallb-system"),
		"namespace of the configuration, the speaker Pods and the ServiceL2Status objects (env METALLB_NAMESPACE)")
	flag.StringVar(&f.nodeName, "node-name", env("METALLB_NODE_NAME", ""), "name of this node (env METALLB_NODE_NAME)")
	flag.StringVar(&f.host, "host", env("METALLB_HOST", ""), "this node's address; the metrics and probes listen on it (env METALLB_HOST)")
	flag.StringVar(&f.podName, "pod-name", env("METALLB_POD_NAME", ""),
		"this speaker's Pod, the owner of its ServiceL2Status objects (env METALLB_POD_NAME; empty: no owner)")
	flag.StringVar(&f.lbClass, "lb-class", "", "announce only Services with this spec.loadBalancerClass (empty: only Services without one)")
	flag.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "", "address of the metrics endpoint (default <host>:"+defaultMetricsPort+"; 0 disables it)")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", "", "address of the health and readiness endpoints (default <host>:"+defaultProbePort+")")
	flag.StringVar(&f.mlBindAddr, "ml-bindaddr", env("METALLB_ML_BIND_ADDR", ""), "address the membership listens on (env METALLB_ML_BIND_ADDR)")
	flag.StringVar(&f.mlLabels, "ml-labels", env("METALLB_ML_LABELS", "app=metallb,component=speaker"),
		"labels of the speaker Pods whose IPs are joined to the membership (env METALLB_ML_LABELS)")
	flag.StringVar(&f.mlSecretKeyPath, "ml-secret-key-path", env("METALLB_ML_SECRET_KEY_PATH", ""),
		"the memberlist Secret mounted as a directory (its key secretkey), or that file; empty: no encryption (env METALLB_ML_SECRET_KEY_PATH)")
	port, err := envInt("METALLB_ML_BIND_PORT", defaultMLPort)
	if err != nil {
		return f, err
	}
	flag.IntVar(&f.mlBindPort, "ml-bindport", port, "port of the membership, TCP and UDP; 0 runs without one, as a single node (env METALLB_ML_BIND_PORT)")
	flag.DurationVar(&f.announceInterval, "announce-interval", 0, "repeat gratuitous ARP / unsolicited NA this often for every announced address (0: only on takeover)")
	flag.Parse()
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

func env(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return fallback
}

func envInt(name string, fallback int) (int, error) {
	v := env(name, "")
	if v == "" {
		return fallback, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return n, nil
}

func main() {
	f, err := parseFlags()
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
	ctrl.SetLogger(zap.New(zap.Level(level)))
	log := ctrl.Log.WithName("setup")
	peers, err := labels.Parse(f.mlLabels)
	if err != nil {
		return fmt.Errorf("--ml-labels: %w", err)
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
	// before answering for it; client-go's default of 5 per second would
	// make that wait. Outside failovers the speaker writes little.
	cfg.QPS, cfg.Burst = 100, 1000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		Cache:                  speaker.CacheOptions(f.namespace, peers),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	key, err := readSecretKey(f.mlSecretKeyPath)
	if err != nil {
		return err
	}
	if key == nil && f.mlBindPort != 0 {
		log.Info("the membership is not encrypted: no memberlist key is configured (--ml-secret-key-path)")
	}
	members, err := newMembership(ctrl.Log.WithName("membership"), f, key, ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	// Whatever way run ends, memberlist stops; after a leave this does
	// nothing.
	defer members.shutdown()
	announcer := newAnnouncer(ctrl.Log.WithName("layer2"), f, ctrlmetrics.Registry)
	// The shutdown order (stopThenLeave says why): stop answering, leave,
	// then delete the ServiceL2Status objects.
	if err := mgr.Add(stopThenLeave{announcer: announcer, leave: members.leave}); err != nil {
		return fmt.Errorf("add announcer: %w", err)
	}
	_, err = speaker.Setup(mgr, speaker.Options{
		NodeName: f.nodeName, Namespace: f.namespace, LBClass: f.lbClass, PodName: f.podName,
		Announcer: announcer, Membership: members.members, PeerSelector: peers, PeerPort: f.mlBindPort,
		Stopped: members.leave,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
