package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/lab"
	"github.com/steadylb/steadylb/test/proc"
	"github.com/steadylb/steadylb/test/scrape"
	"github.com/steadylb/steadylb/test/testenv"
)

// metricName finds the metric names in a PromQL expression: every
// steadylb metric starts with metallb_ or steadylb_, and no PromQL
// function or label does.
var metricName = regexp.MustCompile(`\b(?:metallb|steadylb)_[a-z0-9_]+\b`)

// queriedMetrics are the metric names the chart's rules and dashboard
// query, each with where it is used.
func queriedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	add := func(expr, where string) {
		for _, name := range metricName.FindAllString(expr, -1) {
			// A histogram is queried by its series.
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasPrefix(base, "steadylb_allocation_duration") {
					name = base
				}
			}
			used[name] = append(used[name], where)
		}
	}
	file, alerts := renderedRules(t)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(file, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add(r.Expr, "alert "+r.Alert)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts rendered")
	}
	data, err := os.ReadFile(filepath.Join(root, "charts", "steadylb", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	panels := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			add(target.Expr, "panel "+p.Title)
			panels++
		}
	}
	if panels < 10 {
		t.Fatalf("the dashboard has %d queries", panels)
	}
	return used
}

// exported are the metric names in samples.
func exported(s scrape.Samples) map[string]bool {
	names := map[string]bool{}
	for _, sample := range s {
		name := string(sample.Metric[model.MetricNameLabel])
		names[name] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				names[base] = true
			}
		}
	}
	return names
}

// TestQueriedMetricsAreExported runs the controller and a speaker against
// the local control plane with something to show for every metric: a
// pool and a Service (allocation), a layer-2 advertisement and an
// endpoint on the speaker's node (announcement), the membership, and a
// BGP peer with a BFD profile on the speaker's loopback (sessions that
// exist, down). It then scrapes both and checks that every metric name a
// rule or a dashboard panel uses is among what they export. The speaker
// runs in a network namespace of its own (test/lab's sandbox): it sends
// nothing on the machine's network.
func TestQueriedMetricsAreExported(t *testing.T) {
	used := queriedMetrics(t)
	box := lab.NewSandbox(t, testenv.Shared)
	ns := fixture.Namespace(t)
	fixture.Pool(t, "monitoring", ns, "198.51.100.16/28")

	metrics, probe := proc.FreeAddr(t), proc.FreeAddr(t)
	ctrl := proc.Start(t, controllerBinary, "--kubeconfig", testenv.Shared.Kubeconfig, "--namespace", testenv.Namespace,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probe)
	alive, cancel := ctrl.Alive(ctx) // a controller that exits ends the wait at once
	defer cancel()
	if err := testenv.WaitReady(alive, "http://"+probe+"/readyz", time.Minute); err != nil {
		t.Fatalf("controller never became ready: %v\n%s", err, ctrl.Output())
	}
	svc := fixture.Service(t, ns, "web")

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "monitoring-"}}
	mustCreate(t, node)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, GenerateName: "speaker-",
		Labels: map[string]string{"app": "metallb", "component": "speaker"}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "speaker", Image: "speaker"}}}}
	mustCreate(t, pod)
	mustCreate(t, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"203.0.113.5"}, NodeName: ptr.To(node.Name)}}})
	mustCreate(t, &v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "monitoring"},
		Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"monitoring"}}})
	mustCreate(t, &v1beta1.BFDProfile{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "monitoring"}})
	mustCreate(t, &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "monitoring"},
		Spec: v1beta2.BGPPeerSpec{MyASN: 64512, ASN: 64513, Address: "127.0.0.2", BFDProfile: "monitoring"}})

	speakerMetrics := "127.0.0.1:7472"
	name, cmdline := box.Command(speakerBinary, "--kubeconfig", testenv.Shared.Kubeconfig, "--namespace", testenv.Namespace,
		"--node-name", node.Name, "--pod-name", pod.Name, "--host", "127.0.0.1", "--ml-bindaddr", "127.0.0.1",
		"--metrics-bind-address", speakerMetrics, "--health-probe-bind-address", "127.0.0.1:7474")
	spk := proc.Start(t, name, cmdline...)

	// Wait until each component shows what the test set up for it; the
	// names are checked once all of it is there.
	var fromController, fromSpeaker scrape.Samples
	// Either process exiting ends the wait at once.
	bothAlive, cancelCtrl := ctrl.Alive(ctx)
	defer cancelCtrl()
	bothAlive, cancelSpk := spk.Alive(bothAlive)
	defer cancelSpk()
	err := wait.PollUntilContextTimeout(bothAlive, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if fromController, err = scrape.Get("http://" + metrics + "/metrics"); err != nil {
			return false, nil
		}
		body, err := box.Get(ctx, "http://"+speakerMetrics+"/metrics")
		if err != nil {
			return false, nil
		}
		if fromSpeaker, err = scrape.Parse(bytes.NewReader(body)); err != nil {
			return false, err
		}
		_, allocated := fromController.Value("steadylb_allocation_duration_seconds_count")
		_, announced := fromSpeaker.Value("metallb_speaker_announced", "service", ns+"/"+svc.Name)
		_, bgp := fromSpeaker.Value("metallb_bgp_session_up")
		_, bfd := fromSpeaker.Value("metallb_bfd_session_up")
		_, members := fromSpeaker.Value("steadylb_memberlist_members")
		return allocated && announced && bgp && bfd && members, nil
	})
	if err != nil {
		t.Fatalf("the components never showed everything set up (%v)\ncontroller:\n%s\nspeaker:\n%s", err, ctrl.Output(), spk.Output())
	}

	have := exported(fromController)
	for n := range exported(fromSpeaker) {
		have[n] = true
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !have[n] {
			t.Errorf("%s is queried (%s) but neither component exports it", n, strings.Join(used[n], "; "))
		}
	}
	if len(names) < 20 {
		t.Errorf("the rules and dashboard query %d metrics: fewer than expected, the extraction may be broken", len(names))
	}
	t.Logf("%d metric names queried", len(names))

	// steadylb_configuration_invalid follows each component's
	// ConfigurationState: a pool the model refuses makes both Invalid, and
	// deleting it makes both Valid again; 0 before, 1 while, 0 after.
	components := []struct {
		state  string
		scrape func() scrape.Samples
	}{
		{"controller", func() scrape.Samples { s, _ := scrape.Get("http://" + metrics + "/metrics"); return s }},
		{"speaker-" + node.Name, func() scrape.Samples {
			body, err := box.Get(ctx, "http://"+speakerMetrics+"/metrics")
			if err != nil {
				return nil
			}
			s, _ := scrape.Parse(bytes.NewReader(body))
			return s
		}},
	}
	invalid := func(want float64) func() bool {
		return func() bool {
			for _, c := range components {
				v, ok := c.scrape().Value("steadylb_configuration_invalid")
				var st v1beta1.ConfigurationState
				err := testenv.Shared.Client.Get(ctx, client.ObjectKey{Namespace: testenv.Namespace, Name: c.state}, &st)
				if !ok || v != want || err != nil || (st.Status.Result == v1beta1.ConfigurationInvalid) != (want == 1) {
					return false
				}
			}
			return true
		}
	}
	fixture.WaitFor(t, "steadylb_configuration_invalid 0 and both ConfigurationStates Valid", invalid(0))
	broken := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace, Name: "monitoring-broken"},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"not-an-address"}}}
	mustCreate(t, broken)
	fixture.WaitFor(t, "steadylb_configuration_invalid 1 and both ConfigurationStates Invalid", invalid(1))
	if err := testenv.Shared.Client.Delete(ctx, broken); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "steadylb_configuration_invalid 0 and both ConfigurationStates Valid again", invalid(0))
}

func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := testenv.Shared.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create %T: %v", obj, err)
	}
	t.Cleanup(func() { _ = testenv.Shared.Client.Delete(context.Background(), obj) })
}
