package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/inspect"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestExplainAgreesWithCondition gives the controller a Service for every
// reason it can give and checks that explain reaches the same reason from
// the objects alone; then, with the controller stopped, a change it has
// not seen makes explain say that it disagrees.
func TestExplainAgreesWithCondition(t *testing.T) {
	ns := namespace(t, "reasons", nil)
	fixture.Pool(t, "one", ns, "198.51.100.9/32")
	ctl := startController(t)

	cases := []struct {
		name   string
		opts   []fixture.ServiceOption
		reason string
	}{
		{"holder", nil, assign.ReasonAssigned},
		{"exhausted", nil, assign.ReasonPoolExhausted},
		{"wants-held", []fixture.ServiceOption{fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.9")}, assign.ReasonRequestedIPInUse},
		{"outside", []fixture.ServiceOption{fixture.Annotate("metallb.io/loadBalancerIPs", "203.0.113.200")}, assign.ReasonNoMatchingPool},
		{"unknown-pool", []fixture.ServiceOption{fixture.Annotate("metallb.io/address-pool", "nope")}, assign.ReasonNoMatchingPool},
		{"garbled", []fixture.ServiceOption{fixture.Annotate("metallb.io/loadBalancerIPs", "not-an-ip")}, assign.ReasonInvalidRequest},
		{"needs-dual", []fixture.ServiceOption{dualStack(corev1.IPFamilyPolicyRequireDualStack)}, assign.ReasonNoMatchingPool},
	}
	for _, c := range cases {
		served(t, ns, c.name, c.opts...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := explain(t, ns, c.name)
			cond := condition(t, ns, c.name)
			if cond.Reason != c.reason {
				t.Fatalf("the controller gave %s, the test expects %s: fix the case", cond.Reason, c.reason)
			}
			if e.Decision.Reason != cond.Reason || !e.Agrees {
				t.Errorf("explain decided %s (agrees %v: %s); the condition says %s", e.Decision.Reason, e.Agrees, e.Disagreement, cond.Reason)
			}
			if e.Recorded == nil || e.Recorded.Message != cond.Message {
				t.Errorf("explain shows the condition as %+v, the Service has %q", e.Recorded, cond.Message)
			}
		})
	}

	// The controller stops; the holder goes. The objects now give
	// "exhausted" the address, while its condition still says
	// PoolExhausted: explain must say it disagrees.
	ctl.Kill()
	if err := testenv.Shared.Client.Delete(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder"}}); err != nil {
		t.Fatal(err)
	}
	e := explain(t, ns, "exhausted")
	if e.Agrees || e.Decision.Reason != assign.ReasonAssigned || !strings.Contains(e.Disagreement, "PoolExhausted") {
		t.Errorf("after the holder left: decision %s, agrees %v, %q; want Assigned and a disagreement naming PoolExhausted",
			e.Decision.Reason, e.Agrees, e.Disagreement)
	}
	if text := succeed(t, "explain", "exhausted", "-n", ns); !strings.Contains(text, "DISAGREES") {
		t.Errorf("the table output does not say it disagrees:\n%s", text)
	}
}

func explain(t *testing.T, ns, name string) inspect.Explanation {
	t.Helper()
	var e inspect.Explanation
	out := succeed(t, "explain", name, "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("explain %s -o json: %v\n%s", name, err, out)
	}
	return e
}

func dualStack(policy corev1.IPFamilyPolicy) fixture.ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = &policy
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}
}
