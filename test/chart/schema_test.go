package chart

import (
	"strings"
	"testing"
)

// TestSchemaRefusesTypos renders with one bad value at a time: the
// schema must refuse each, naming the key; the first row proves that a
// good value of the same shape passes.
func TestSchemaRefusesTypos(t *testing.T) {
	tests := []struct {
		name string
		set  string
		// want is in the error, empty when the value is good.
		want string
	}{
		{"a good nested value", "controller.replicas=3", ""},
		{"a top-level typo", "loadBalancerClas=x", "loadBalancerClas"},
		{"a nested typo", "controller.replicaz=3", "replicaz"},
		{"a typo under a MetalLB key", "speaker.memberlist.mlBindPrt=7000", "mlBindPrt"},
		{"a typo in an alert", "prometheus.prometheusRule.staleConfg.enabled=false", "staleConfg"},
		{"a port that is not a number", "speaker.memberlist.mlBindPort=seven", "mlBindPort"},
		{"a port out of range", "prometheus.metricsPort=70000", "metricsPort"},
		{"an unknown log level", "controller.logLevel=verbose", "logLevel"},
		{"a digest that is not one", "controller.image.digest=latest", "digest"},
		{"a duration that is not one", "controller.retainFor=ten minutes", "retainFor"},
		{"a failure policy MetalLB does not have", "crds.validationFailurePolicy=Sometimes", "validationFailurePolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helm.Template(ns, "--set", tt.set)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused a good value: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("--set %s was accepted", tt.set)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("the error does not name %q:\n%v", tt.want, err)
			}
		})
	}
}

// TestRefusedCombinations are values the schema allows one by one but
// that cannot work together; each fails with a message saying why.
func TestRefusedCombinations(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no membership", []string{"--set", "speaker.memberlist.enabled=false"}, "not supported"},
		{"two controllers without a Lease", []string{"--set", "controller.leaderElection.enabled=false"}, "leaderElection"},
		{"ServiceMonitor and PodMonitor", []string{"--set", "prometheus.serviceMonitor.enabled=true,prometheus.podMonitor.enabled=true",
			"--set", "prometheus.serviceAccount=p,prometheus.namespace=m"}, "exclusive"},
		{"monitors without Prometheus' ServiceAccount", []string{"--set", "prometheus.podMonitor.enabled=true"}, "prometheus.serviceAccount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helm.Template(ns, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error naming %q, got %v", tt.want, err)
			}
		})
	}
	if _, err := helm.Template(ns, "--set", "controller.leaderElection.enabled=false,controller.replicas=1"); err != nil {
		t.Errorf("one controller without leader election is refused: %v", err)
	}
}

// TestNotesNameIgnoredValues installs (client-side dry run) with MetalLB
// keys that mean nothing here: the notes must name each, and name none
// for the defaults.
func TestNotesNameIgnoredValues(t *testing.T) {
	notes := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := helm.Run(append([]string{"install", "steadylb", helm.Chart, "--namespace", ns, "--dry-run=client"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		_, n, ok := strings.Cut(out, "NOTES:")
		if !ok {
			t.Fatalf("no NOTES in:\n%s", out)
		}
		return n
	}
	if n := notes(t); strings.Contains(n, "ignored") {
		t.Errorf("the default install names ignored values:\n%s", n)
	}
	n := notes(t, "--set", "frrk8s.enabled=true,speaker.frr.enabled=true,controller.webhookMode=disabled,fullnameOverride=lb",
		"--set", "tls.minVersion=VersionTLS13,speaker.bgpDebounceTimeout=3000,controller.readinessProbe.port=17472")
	for _, key := range []string{"frrk8s.enabled", "speaker.frr.enabled", "controller.webhookMode", "fullnameOverride",
		"tls.minVersion", "speaker.bgpDebounceTimeout", "controller.readinessProbe.port"} {
		if !strings.Contains(n, key) {
			t.Errorf("the notes do not name %s:\n%s", key, n)
		}
	}
}
