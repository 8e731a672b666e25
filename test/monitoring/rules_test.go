package monitoring

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/steadylb/steadylb/test/render"
	"github.com/steadylb/steadylb/test/testenv"
)

// renderedRules renders the chart's PrometheusRule with default values
// (and args) and returns its groups as a Prometheus rule file.
func renderedRules(t *testing.T, args ...string) (file []byte, alerts []string) {
	t.Helper()
	objs, err := helm.Template(testenv.Namespace, append([]string{"--set", "prometheus.prometheusRule.enabled=true",
		"--show-only", "templates/prometheusrule.yaml"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Items) != 1 {
		t.Fatalf("rendered %d objects, want the PrometheusRule", len(objs.Items))
	}
	groups, _, _ := unstructured.NestedSlice(objs.Items[0].Object, "spec", "groups")
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if a, ok := r.(map[string]any)["alert"].(string); ok {
				alerts = append(alerts, a)
			}
		}
	}
	file, err = yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	return file, alerts
}

// ruleTests is the part of testdata/alerts.test.yaml this suite reads.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlertRules checks the rendered rules with promtool and runs their
// unit tests (testdata/alerts.test.yaml): each alert must have a case in
// which it fires and one in which it stays quiet.
func TestAlertRules(t *testing.T) {
	rules, alerts := renderedRules(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	testFile, err := os.ReadFile("testdata/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), testFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := render.Run(nil, promtool, "check", "rules", filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := render.Run(nil, promtool, "test", "rules", filepath.Join(dir, "alerts.test.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	var tests ruleTests
	if err := yaml.Unmarshal(testFile, &tests); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tests.RuleFiles, []string{"rules.yaml"}) {
		t.Fatalf("alerts.test.yaml reads %q, want the rendered rules.yaml", tests.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] || !quiet[a] {
			t.Errorf("alert %s has no unit test in which it fires (%v) or none in which it stays quiet (%v)", a, fires[a], quiet[a])
		}
	}
	if len(alerts) < 11 {
		t.Errorf("the chart renders %d alerts, want MetalLB's 7 and steadylb's 4", len(alerts))
	}
}

// TestDisabledAlertsAreLeftOut switches each alert off by its value.
func TestDisabledAlertsAreLeftOut(t *testing.T) {
	_, all := renderedRules(t)
	_, some := renderedRules(t, "--set", "prometheus.prometheusRule.staleConfig.enabled=false,prometheus.prometheusRule.addressPoolUsage.enabled=false,prometheus.prometheusRule.speakerFenced.enabled=false")
	for _, gone := range []string{"MetalLBStaleConfig", "MetalLBAddressPoolUsage75Percent", "SteadyLBSpeakerFenced"} {
		if !slices.Contains(all, gone) || slices.Contains(some, gone) {
			t.Errorf("%s: in the default rules %v, with it disabled %v", gone, slices.Contains(all, gone), slices.Contains(some, gone))
		}
	}
	if len(some) != len(all)-5 {
		t.Errorf("disabling 3 settings (5 alerts) left %d of %d alerts", len(some), len(all))
	}
}
