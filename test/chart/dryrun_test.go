package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/steadylb/steadylb/test/testenv"
)

// monitoringAPI is the Prometheus Operator API the chart renders for.
const monitoringAPI = "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

var (
	monitoringOnce sync.Once
	monitoringErr  error
)

// installMonitoringCRDs installs the Prometheus Operator's ServiceMonitor,
// PodMonitor and PrometheusRule CRDs, generated with controller-gen from
// the operator's own API types (the module in go.mod), so the dry runs
// check the monitoring objects against their real schemas.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	monitoringOnce.Do(func() {
		dir, err := os.MkdirTemp("", "steadylb-monitoring-crds-")
		if err != nil {
			monitoringErr = err
			return
		}
		defer os.RemoveAll(dir)
		gen := exec.Command("go", "tool", "controller-gen", "crd", "paths="+monitoringAPI, "output:crd:artifacts:config="+dir)
		gen.Dir = root
		if out, err := gen.CombinedOutput(); err != nil {
			monitoringErr = fmt.Errorf("generate the monitoring CRDs: %w\n%s", err, out)
			return
		}
		for _, plural := range []string{"servicemonitors", "podmonitors", "prometheusrules"} {
			file := filepath.Join(dir, "monitoring.coreos.com_"+plural+".yaml")
			if out, err := kubectl("apply", "--server-side", "-f", file); err != nil {
				monitoringErr = fmt.Errorf("install %s: %w\n%s", file, err, out)
				return
			}
		}
		for _, plural := range []string{"servicemonitors", "podmonitors", "prometheusrules"} {
			if out, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+plural+".monitoring.coreos.com"); err != nil {
				monitoringErr = fmt.Errorf("wait for %s: %w\n%s", plural, err, out)
				return
			}
		}
	})
	if monitoringErr != nil {
		t.Fatal(monitoringErr)
	}
}

// kubectl runs the control plane's kubectl; stdin is nil.
func kubectl(args ...string) (string, error) {
	return kubectlIn(nil, args...)
}

// kubectlIn runs kubectl with stdin and returns its stdout; the error
// carries stderr, where kubectl also prints warnings. kubectl fetches the
// API server's OpenAPI before a validated apply and gives up on a slow
// answer with "Please retry": it is retried, a few times.
func kubectlIn(stdin []byte, args ...string) (string, error) {
	var err error
	for range 3 {
		var stdout, stderr strings.Builder
		cmd := testenv.Shared.KubectlCmd(args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
		if err = cmd.Run(); err == nil {
			return stdout.String(), nil
		}
		err = fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		if !strings.Contains(stderr.String(), "Please retry") {
			return "", err
		}
	}
	return "", err
}

// asList encodes objects as one kubectl-readable List.
func asList(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o.Object
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatalf("encode objects: %v", err)
	}
	return data
}

// dryRun has the API server validate objs without changing anything,
// and checks that it accepted every one.
func dryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if len(objs) == 0 {
		return
	}
	out, err := kubectlIn(asList(t, objs), "apply", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "(server dry run)"); n != len(objs) {
		t.Errorf("the server dry run accepted %d objects, want %d:\n%s", n, len(objs), out)
	}
}

// TestRenderedObjectsPassDryRun renders the chart with each values file
// and with everything switched on, and has the API server validate every
// object (CRDs first, then the rest): schemas, field validation and
// admission, without creating anything.
func TestRenderedObjectsPassDryRun(t *testing.T) {
	installMonitoringCRDs(t)
	everything := []string{"--set", strings.Join([]string{
		"prometheus.serviceMonitor.enabled=true", "prometheus.prometheusRule.enabled=true",
		"prometheus.grafanaDashboard.enabled=true", "prometheus.serviceAccount=prometheus", "prometheus.namespace=" + ns,
		"prometheus.scrapeAnnotations=true", "networkpolicies.enabled=true", "networkpolicies.defaultDeny=true",
		"controller.retainFor=5m", "speaker.startupProbe.enabled=true", "loadBalancerClass=example.com/lb",
	}, ",")}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"MetalLB's values", []string{"-f", values("metallb-values.yaml"), "--set", "prometheus.namespace=" + ns}},
		{"steadylb's values", []string{"-f", values("steadylb-values.yaml"), "--set", "prometheus.namespace=" + ns,
			"--set", "prometheus.grafanaDashboard.namespace=" + ns}},
		{"everything", everything},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := template(t, tt.args...)
			dryRun(t, objs.OfKind("CustomResourceDefinition"))
			dryRun(t, objs.Without("CustomResourceDefinition").Items)
		})
	}
}

// TestMonitoringObjectsMatchTheOperatorTypes decodes the rendered
// ServiceMonitors, PodMonitors and PrometheusRule strictly into the
// Prometheus Operator's Go types: a misspelt field fails here even where
// the CRD would prune it.
func TestMonitoringObjectsMatchTheOperatorTypes(t *testing.T) {
	objs := template(t, "--set", "prometheus.serviceMonitor.enabled=true,prometheus.prometheusRule.enabled=true",
		"--set", "prometheus.serviceAccount=p,prometheus.namespace=m")
	pm := template(t, "--set", "prometheus.podMonitor.enabled=true,prometheus.serviceAccount=p,prometheus.namespace=m")
	checks := []struct {
		objs  []*unstructured.Unstructured
		typed func() any
	}{
		{objs.OfKind("ServiceMonitor"), func() any { return &monitoringv1.ServiceMonitor{} }},
		{objs.OfKind("PrometheusRule"), func() any { return &monitoringv1.PrometheusRule{} }},
		{pm.OfKind("PodMonitor"), func() any { return &monitoringv1.PodMonitor{} }},
	}
	for _, c := range checks {
		if len(c.objs) == 0 {
			t.Errorf("nothing rendered for %T", c.typed())
		}
		for _, o := range c.objs {
			data, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(data, c.typed()); err != nil {
				t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
}
