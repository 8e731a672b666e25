package chart

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/steadylb/steadylb/test/render"
)

// workloads are the two pod templates of a rendering, typed.
type workloads struct {
	objs       render.Objects
	controller appsv1.Deployment
	speaker    appsv1.DaemonSet
}

func workloadsOf(t *testing.T, objs render.Objects) workloads {
	t.Helper()
	w := workloads{objs: objs}
	if err := objs.Into("Deployment", ns, "controller", &w.controller); err != nil {
		t.Fatal(err)
	}
	if err := objs.Into("DaemonSet", ns, "speaker", &w.speaker); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w workloads) controllerPod() corev1.PodSpec { return w.controller.Spec.Template.Spec }
func (w workloads) speakerPod() corev1.PodSpec    { return w.speaker.Spec.Template.Spec }
func (w workloads) controllerC() corev1.Container {
	return w.controller.Spec.Template.Spec.Containers[0]
}
func (w workloads) speakerC() corev1.Container { return w.speaker.Spec.Template.Spec.Containers[0] }

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func port(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func hasArg(c corev1.Container, arg string) error {
	if !slices.Contains(c.Args, arg) {
		return fmt.Errorf("%s args %q lack %q", c.Name, c.Args, arg)
	}
	return nil
}

func expect(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

// nested reads a string field of an unstructured object.
func nested(o *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, fields...)
	return s
}

// alerts returns the rendered PrometheusRule's alerts by name.
func alerts(t *testing.T, objs render.Objects) map[string]map[string]any {
	t.Helper()
	rule := objs.Find("PrometheusRule", ns, "steadylb")
	if rule == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	out := map[string]map[string]any{}
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			m := r.(map[string]any)
			if name, ok := m["alert"].(string); ok {
				out[name] = m
			}
		}
	}
	return out
}

// TestMetalLBValues renders the chart with a values file written for
// MetalLB's chart and checks every key's effect.
func TestMetalLBValues(t *testing.T) {
	objs := template(t, "-f", values("metallb-values.yaml"))
	w := workloadsOf(t, objs)
	tests := []struct {
		key   string
		check func() error
	}{
		{"loadBalancerClass", func() error {
			if err := hasArg(w.controllerC(), "--lb-class=example.com/metallb"); err != nil {
				return err
			}
			return hasArg(w.speakerC(), "--lb-class=example.com/metallb")
		}},
		{"imagePullSecrets", func() error {
			want := []corev1.LocalObjectReference{{Name: "regcred"}}
			return expect(cmp.Equal(w.controllerPod().ImagePullSecrets, want) && cmp.Equal(w.speakerPod().ImagePullSecrets, want),
				"pull secrets %v, %v", w.controllerPod().ImagePullSecrets, w.speakerPod().ImagePullSecrets)
		}},
		{"rbac.create", func() error {
			return expect(len(objs.OfKind("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")) >= 8, "RBAC objects missing")
		}},
		{"prometheus.scrapeAnnotations", func() error {
			a := w.speaker.Spec.Template.Annotations
			return expect(a["prometheus.io/scrape"] == "true" && a["prometheus.io/port"] == "9120" &&
				w.controller.Spec.Template.Annotations["prometheus.io/scrape"] == "true", "pod annotations %v", a)
		}},
		{"prometheus.metricsPort", func() error {
			if err := hasArg(w.controllerC(), "--metrics-bind-address=:9120"); err != nil {
				return err
			}
			if err := hasArg(w.speakerC(), "--metrics-bind-address=$(METALLB_HOST):9120"); err != nil {
				return err
			}
			return expect(port(w.controllerC(), "monitoring") == 9120 && port(w.speakerC(), "monitoring") == 9120, "metrics ports")
		}},
		{"prometheus.serviceMonitor", func() error {
			for _, c := range []string{"controller", "speaker"} {
				sm := objs.Find("ServiceMonitor", ns, c+"-monitor")
				if sm == nil || objs.Find("Service", ns, c+"-monitor") == nil {
					return fmt.Errorf("no ServiceMonitor and Service %s-monitor", c)
				}
				if sm.GetLabels()["release"] != "kube-prometheus" {
					return fmt.Errorf("ServiceMonitor %s labels %v", sm.GetName(), sm.GetLabels())
				}
				eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				if len(eps) != 1 || eps[0].(map[string]any)["interval"] != "30s" {
					return fmt.Errorf("ServiceMonitor %s endpoints %v", sm.GetName(), eps)
				}
			}
			return nil
		}},
		{"prometheus.serviceAccount and namespace", func() error {
			rb := objs.Find("RoleBinding", ns, "steadylb-prometheus")
			if rb == nil {
				return fmt.Errorf("no RoleBinding for Prometheus")
			}
			subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
			s := subjects[0].(map[string]any)
			return expect(s["name"] == "prometheus-k8s" && s["namespace"] == "monitoring", "subject %v", s)
		}},
		{"prometheus.prometheusRule", func() error {
			a := alerts(t, objs)
			var names []string
			for n := range a {
				names = append(names, n)
			}
			slices.Sort(names)
			want := []string{"MetalLBAddressPoolExhausted", "MetalLBAddressPoolUsage80Percent", "MetalLBAddressPoolUsage90Percent",
				"MetalLBBGPSessionDown", "MetalLBConfigNotLoaded", "MetalLBStaleConfig", "MyCustomAlert",
				"SteadyLBAddressMoved", "SteadyLBBFDSessionDown", "SteadyLBConfigurationInvalid", "SteadyLBSpeakerFenced"}
			if diff := cmp.Diff(want, names); diff != "" {
				return fmt.Errorf("alerts (-want +got):\n%s", diff)
			}
			if !strings.Contains(a["MetalLBAddressPoolExhausted"]["expr"].(string), `pool!~"^scratch-.*"`) {
				return fmt.Errorf("excludePools not in %q", a["MetalLBAddressPoolExhausted"]["expr"])
			}
			if a["MetalLBBGPSessionDown"]["labels"].(map[string]any)["severity"] != "page" {
				return fmt.Errorf("bgpSessionDown labels %v", a["MetalLBBGPSessionDown"]["labels"])
			}
			return expect(objs.Find("PrometheusRule", ns, "steadylb").GetLabels()["release"] == "kube-prometheus", "rule labels")
		}},
		{"controller.logLevel, speaker.logLevel (all is debug)", func() error {
			if err := hasArg(w.controllerC(), "--log-level=debug"); err != nil {
				return err
			}
			return hasArg(w.speakerC(), "--log-level=debug")
		}},
		{"controller.image, speaker.image", func() error {
			c, s := w.controllerC(), w.speakerC()
			return expect(c.Image == "registry.example.com/mirror/controller:v0.1.0-mirror" && c.ImagePullPolicy == corev1.PullIfNotPresent &&
				s.Image == "registry.example.com/mirror/speaker:v0.1.0-mirror", "images %s (%s), %s", c.Image, c.ImagePullPolicy, s.Image)
		}},
		{"controller.command", func() error {
			c := w.controllerC()
			return expect(slices.Equal(c.Command, []string{"/controller"}) && w.speakerC().Command == nil, "commands %q %q", c.Command, w.speakerC().Command)
		}},
		{"resources", func() error {
			limits, requests := w.controllerC().Resources.Limits, w.speakerC().Resources.Requests
			return expect(limits.Memory().String() == "256Mi" && requests.Cpu().String() == "100m",
				"resources %v %v", w.controllerC().Resources, w.speakerC().Resources)
		}},
		{"nodeSelector", func() error {
			want := map[string]string{"kubernetes.io/os": "linux", "node-role.kubernetes.io/infra": ""}
			return expect(maps.Equal(w.controllerPod().NodeSelector, want) && w.speakerPod().NodeSelector["metallb-speaker"] == "true",
				"node selectors %v %v", w.controllerPod().NodeSelector, w.speakerPod().NodeSelector)
		}},
		{"tolerations, speaker.tolerateMaster=false", func() error {
			ct, st := w.controllerPod().Tolerations, w.speakerPod().Tolerations
			return expect(len(ct) == 1 && ct[0].Key == "infra" && len(st) == 1 && st[0].Key == "edge", "tolerations %v %v", ct, st)
		}},
		{"affinity", func() error {
			a := w.controllerPod().Affinity
			return expect(a != nil && a.PodAntiAffinity != nil, "affinity %v", a)
		}},
		{"priorityClassName", func() error {
			return expect(w.controllerPod().PriorityClassName == "system-cluster-critical" &&
				w.speakerPod().PriorityClassName == "system-node-critical", "priority classes")
		}},
		{"podAnnotations, labels", func() error {
			return expect(w.controller.Spec.Template.Annotations["example.com/team"] == "network" &&
				w.controller.Spec.Template.Labels["team"] == "network" && w.controller.Labels["team"] == "network" &&
				w.speaker.Spec.Template.Annotations["example.com/team"] == "network", "annotations and labels")
		}},
		{"controller.securityContext", func() error {
			sc := w.controllerPod().SecurityContext
			return expect(sc != nil && sc.FSGroup != nil && *sc.FSGroup == 65534 && *sc.RunAsUser == 65534, "pod security context %v", sc)
		}},
		{"livenessProbe, readinessProbe", func() error {
			c := w.controllerC()
			if err := hasArg(c, "--health-probe-bind-address=:17472"); err != nil {
				return err
			}
			if err := hasArg(w.speakerC(), "--health-probe-bind-address=$(METALLB_HOST):17474"); err != nil {
				return err
			}
			l, r := c.LivenessProbe, c.ReadinessProbe
			return expect(port(c, "probes") == 17472 && l.FailureThreshold == 5 && l.InitialDelaySeconds == 15 && l.PeriodSeconds == 20 &&
				l.TimeoutSeconds == 2 && r.FailureThreshold == 4 && r.InitialDelaySeconds == 5 && r.PeriodSeconds == 7 && r.TimeoutSeconds == 3,
				"probes %+v %+v", l, r)
		}},
		{"speaker.memberlist", func() error {
			s := w.speakerC()
			p, _ := env(s, "METALLB_ML_BIND_PORT")
			k, _ := env(s, "METALLB_ML_SECRET_KEY_PATH")
			return expect(p.Value == "7947" && port(s, "memberlist-tcp") == 7947 && port(s, "memberlist-udp") == 7947 &&
				k.Value == "/etc/memberlist_key" && s.VolumeMounts[0].MountPath == "/etc/memberlist_key", "memberlist settings %v", s.Env)
		}},
		{"speaker.excludeInterfaces", func() error {
			cm := objs.Find("ConfigMap", ns, "metallb-excludel2")
			if cm == nil {
				return fmt.Errorf("no ConfigMap metallb-excludel2")
			}
			var data struct {
				Exclude []string `json:"announcedInterfacesToExclude"`
			}
			if err := yaml.UnmarshalStrict([]byte(nested(cm, "data", "excludel2.yaml")), &data); err != nil {
				return err
			}
			return expect(len(data.Exclude) == 14 && slices.Contains(data.Exclude, "^veth.*") && slices.Contains(data.Exclude, "^lo$"),
				"excluded interfaces %q", data.Exclude)
		}},
		{"speaker.ignoreExcludeLB", func() error { return hasArg(w.speakerC(), "--ignore-exclude-lb") }},
		{"crds.enabled", func() error {
			files, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
			crds := objs.OfKind("CustomResourceDefinition")
			return expect(len(crds) == len(files) && len(files) > 0, "%d CRDs rendered, config/crd/bases has %d", len(crds), len(files))
		}},
		{"crds.validationFailurePolicy", func() error {
			p := objs.Find("ValidatingAdmissionPolicy", "", "steadylb-configuration")
			return expect(p != nil && nested(p, "spec", "failurePolicy") == "Ignore", "admission policy %v", p)
		}},
		{"networkpolicies", func() error {
			np := objs.Find("NetworkPolicy", ns, "controller")
			if objs.Find("NetworkPolicy", ns, "default-deny") == nil || np == nil {
				return fmt.Errorf("NetworkPolicies missing")
			}
			egress, _, _ := unstructured.NestedSlice(np.Object, "spec", "egress")
			ports := egress[0].(map[string]any)["ports"].([]any)
			return expect(fmt.Sprint(ports[0].(map[string]any)["port"]) == "443", "egress %v", egress)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSteadyLBValues checks the chart's own values.
func TestSteadyLBValues(t *testing.T) {
	objs := template(t, "-f", values("steadylb-values.yaml"))
	w := workloadsOf(t, objs)
	c, s := w.controllerC(), w.speakerC()
	tests := []struct {
		name  string
		check func() error
	}{
		{"controller.replicas", func() error {
			return expect(w.controller.Spec.Replicas != nil && *w.controller.Spec.Replicas == 3, "replicas %v", w.controller.Spec.Replicas)
		}},
		{"controller.leaderElection", func() error {
			for _, a := range []string{"--leader-elect=true", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=4s"} {
				if err := hasArg(c, a); err != nil {
					return err
				}
			}
			return nil
		}},
		{"controller.retainFor", func() error { return hasArg(c, "--retain-for=10m") }},
		{"controller.extraArgs", func() error { return hasArg(c, "--some-future-flag=1") }},
		{"image digests", func() error {
			return expect(strings.HasSuffix(c.Image, "controller@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") &&
				strings.HasSuffix(s.Image, "speaker@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"), "images %s %s", c.Image, s.Image)
		}},
		{"speaker.announceInterval", func() error { return hasArg(s, "--announce-interval=30s") }},
		{"speaker.secretName: the user's Secret, mounted, named to the controller, not rendered", func() error {
			e, _ := env(c, "METALLB_ML_SECRET_NAME")
			vol := w.speakerPod().Volumes[0]
			return expect(e.Value == "my-memberlist" && vol.Secret.SecretName == "my-memberlist" &&
				objs.Find("Secret", ns, "my-memberlist") == nil && objs.Find("Secret", ns, "memberlist") == nil,
				"secret env %v, volume %v", e, vol)
		}},
		{"speaker.secretName: the controller may get and update it by name", func() error {
			role := objs.Find("Role", ns, "steadylb-controller")
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			for _, r := range rules {
				m := r.(map[string]any)
				if names, ok := m["resourceNames"]; ok && slices.Contains(toStrings(m["resources"]), "secrets") {
					return expect(slices.Equal(toStrings(names), []string{"my-memberlist"}), "secret rule names %v", names)
				}
			}
			// Until the controller fills the key (members' work) its
			// rules name no Secret: nothing to rename.
			return nil
		}},
		{"speaker.startupProbe", func() error {
			return expect(s.StartupProbe != nil && s.StartupProbe.FailureThreshold == 30, "startup probe %v", s.StartupProbe)
		}},
		{"prometheus.podMonitor", func() error {
			return expect(objs.Find("PodMonitor", ns, "controller") != nil && objs.Find("PodMonitor", ns, "speaker") != nil &&
				len(objs.OfKind("ServiceMonitor")) == 0, "PodMonitors")
		}},
		{"prometheus.grafanaDashboard", func() error {
			cm := objs.Find("ConfigMap", "monitoring", "steadylb-dashboard")
			if cm == nil {
				return fmt.Errorf("no dashboard ConfigMap in monitoring")
			}
			want, err := os.ReadFile(filepath.Join(root, "charts", "steadylb", "files", "dashboard.json"))
			if err != nil {
				return err
			}
			return expect(strings.TrimSpace(nested(cm, "data", "steadylb.json")) == strings.TrimSpace(string(want)) &&
				cm.GetLabels()["grafana_dashboard"] == "1", "dashboard ConfigMap differs from files/dashboard.json")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// TestDefaultObjects lists what a default install creates: config/default's
// objects (less the Namespace, which Helm does not own), the interface
// exclusion ConfigMap and the admission policy; no monitoring objects.
func TestDefaultObjects(t *testing.T) {
	objs := template(t)
	var got []string
	for _, o := range objs.Items {
		if o.GetKind() != "CustomResourceDefinition" {
			got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
		}
	}
	slices.Sort(got)
	want := []string{
		"ClusterRole /steadylb-controller", "ClusterRole /steadylb-speaker",
		"ClusterRoleBinding /steadylb-controller", "ClusterRoleBinding /steadylb-speaker",
		"ConfigMap metallb-system/metallb-excludel2",
		"DaemonSet metallb-system/speaker", "Deployment metallb-system/controller",
		"Role metallb-system/steadylb-controller", "Role metallb-system/steadylb-speaker",
		"RoleBinding metallb-system/steadylb-controller", "RoleBinding metallb-system/steadylb-speaker",
		"Secret metallb-system/memberlist",
		"ServiceAccount metallb-system/controller", "ServiceAccount metallb-system/speaker",
		"ValidatingAdmissionPolicy /steadylb-configuration", "ValidatingAdmissionPolicyBinding /steadylb-configuration",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default objects (-want +got):\n%s", diff)
	}
	sec := objs.Find("Secret", ns, "memberlist")
	if _, has := sec.Object["data"]; has {
		t.Errorf("the memberlist Secret is rendered with data: an upgrade would overwrite the controller's key")
	}
}

// TestHelm3RendersTheSame renders the default and the MetalLB-style
// values with Helm v3 and v4: the objects must be identical.
func TestHelm3RendersTheSame(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", values("metallb-values.yaml")}, {"-f", values("steadylb-values.yaml")}} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			v4 := template(t, args...)
			v3, err := helm3.Template(ns, args...)
			if err != nil {
				t.Fatal(err)
			}
			if len(v4.Items) == 0 || len(v3.Items) != len(v4.Items) {
				t.Fatalf("Helm v3 rendered %d objects, v4 %d", len(v3.Items), len(v4.Items))
			}
			for i := range v4.Items {
				if diff := cmp.Diff(v4.Items[i].Object, v3.Items[i].Object); diff != "" {
					t.Errorf("%s %s differs between Helm v4 and v3 (-v4 +v3):\n%s", v4.Items[i].GetKind(), v4.Items[i].GetName(), diff)
				}
			}
		})
	}
}

// TestLint runs `helm lint --strict` with each values file, with Helm v4
// and v3.
func TestLint(t *testing.T) {
	for _, h := range []struct {
		name string
		helm *render.Helm
	}{{"v4", helm}, {"v3", helm3}} {
		for _, args := range [][]string{nil, {"-f", values("metallb-values.yaml")}, {"-f", values("steadylb-values.yaml")}} {
			t.Run(h.name+fmt.Sprint(args), func(t *testing.T) {
				out, err := h.helm.Run(append([]string{"lint", "--strict", h.helm.Chart, "--namespace", ns}, args...)...)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})
		}
	}
}
