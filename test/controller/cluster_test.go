package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

var ctx = context.Background()

func kube() client.Client { return testenv.Shared.Client }

// observed is a Service as the API server shows it.
type observed struct {
	ips             string // comma-separated ingress IPs
	pool            string
	record          string // the allocation record annotation
	reason          string // of the AddressAssigned condition
	message         string
	resourceVersion string
}

// observe lists the Services of a namespace from the API server.
func observe(t *testing.T, ns string) map[string]observed {
	t.Helper()
	var list corev1.ServiceList
	if err := kube().List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list services: %v", err)
	}
	out := map[string]observed{}
	for _, s := range list.Items {
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		o := observed{ips: strings.Join(ips, ","), pool: s.Annotations[assign.AnnotationAllocatedFromPool],
			record: s.Annotations[assign.AnnotationAllocation], resourceVersion: s.ResourceVersion}
		if c := meta.FindStatusCondition(s.Status.Conditions, assign.ConditionAddressAssigned); c != nil {
			o.reason, o.message = c.Reason, c.Message
		}
		out[s.Name] = o
	}
	return out
}

// waitSettled waits until every listed Service has a condition and, when it
// shows addresses, the pool annotation (written right after the status).
func waitSettled(t *testing.T, ns string, names ...string) map[string]observed {
	t.Helper()
	var got map[string]observed
	fixture.WaitFor(t, fmt.Sprintf("services %v to be decided", names), func() bool {
		got = observe(t, ns)
		for _, n := range names {
			if o := got[n]; o.reason == "" || (o.ips == "") != (o.pool == "") {
				return false
			}
		}
		return true
	})
	return got
}

// checkUnique fails when an address is shown by two Services.
func checkUnique(t *testing.T, got map[string]observed) {
	t.Helper()
	holder := map[string]string{}
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if got[n].ips == "" {
			continue
		}
		for _, ip := range strings.Split(got[n].ips, ",") {
			if other, ok := holder[ip]; ok {
				t.Errorf("address %s held by both %s and %s", ip, other, n)
			}
			holder[ip] = n
		}
	}
}

// serviceRef is a Service object with only its name set, for deletes.
func serviceRef(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// outcome is what one Service should show after the controller decided.
type outcome struct {
	name, ips, reason string
	message           string // a part of the condition's message
}

// checkOutcomes compares each Service's addresses, reason and message with
// what it should show, one subtest a Service.
func checkOutcomes(t *testing.T, got map[string]observed, want []outcome) {
	t.Helper()
	for _, w := range want {
		t.Run(w.name, func(t *testing.T) {
			o := got[w.name]
			if o.ips != w.ips || o.reason != w.reason || !strings.Contains(o.message, w.message) {
				t.Errorf("got ips %q reason %q message %q\nwant ips %q reason %q message containing %q",
					o.ips, o.reason, o.message, w.ips, w.reason, w.message)
			}
		})
	}
}
