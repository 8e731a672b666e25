package plugin

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/steadylb/steadylb/internal/inspect"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// TestMigrateFromMetalLB builds a state the way MetalLB leaves it, with no
// steadylb controller running: an address in two Services' status, a
// stale ip-allocated-from-pool annotation, an address outside every pool,
// a request steadylb cannot read. migrate reports each and exits 1; a
// configuration steadylb refuses is reported too.
func TestMigrateFromMetalLB(t *testing.T) {
	ns := namespace(t, "legacy", nil)
	fixture.Pool(t, "legacy", ns, "198.51.100.40/29")
	fixture.Pool(t, "other", ns, "203.0.113.16/30")

	const fromPool = "metallb.io/ip-allocated-from-pool"
	// dup-b is older than dup-a: age, not name, decides who keeps .41.
	older := metallbService(t, ns, "dup-b", "198.51.100.41", fixture.Annotate(fromPool, "legacy"))
	fixture.Later(t, older)
	metallbService(t, ns, "dup-a", "198.51.100.41", fixture.Annotate(fromPool, "legacy"))
	metallbService(t, ns, "keeper", "198.51.100.40", fixture.Annotate(fromPool, "legacy"))
	metallbService(t, ns, "stale", "203.0.113.16", fixture.Annotate(fromPool, "legacy"))
	metallbService(t, ns, "outside", "198.51.100.200", fixture.Annotate(fromPool, "legacy"))
	metallbService(t, ns, "garbled", "198.51.100.43", fixture.Annotate(fromPool, "legacy"),
		fixture.Annotate("metallb.io/loadBalancerIPs", "198.51.100.43,not-an-ip"))
	metallbService(t, ns, "pending", "")

	r := plugin(t, "migrate")
	if r.code != 1 {
		t.Fatalf("migrate exited %d, want 1 (addresses change)\n%s%s", r.code, r.stdout, r.stderr)
	}
	golden(t, "migrate-metallb.txt", r.stdout)

	var m inspect.Migration
	r = plugin(t, "migrate", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("migrate -o json: %v\n%s", err, r.stdout)
	}
	kinds := map[string]string{}
	for _, f := range m.Findings {
		kinds[f.Service] += f.Kind + " "
	}
	want := map[string]string{
		ns + "/dup-a":   inspect.FindingDuplicate + " ",
		ns + "/stale":   inspect.FindingStaleAnnotation + " ",
		ns + "/outside": inspect.FindingOutsidePools + " ",
		ns + "/garbled": inspect.FindingInvalidRequest + " ",
		ns + "/pending": inspect.FindingWouldAssign + " ",
	}
	for svc, k := range want {
		if kinds[svc] != k {
			t.Errorf("%s: findings %q, want %q", svc, kinds[svc], k)
		}
	}
	if len(kinds) != len(want) || m.Changed != 2 || r.code != 1 {
		t.Errorf("findings %v, %d changed, exit %d; want exactly %v, 2 changed (dup-a, outside), exit 1", kinds, m.Changed, r.code, want)
	}

	t.Run("configuration steadylb refuses", func(t *testing.T) {
		fixture.Pool(t, "overlap", ns, "198.51.100.44/30")
		r := plugin(t, "migrate")
		if r.code != 1 {
			t.Fatalf("migrate exited %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
		}
		golden(t, "migrate-refused.txt", r.stdout)
	})
}

// metallbService creates a Service and writes its status as MetalLB
// would: the address, no condition, no steadylb record. An empty ip
// leaves it pending.
func metallbService(t *testing.T, ns, name, ip string, opts ...fixture.ServiceOption) *corev1.Service {
	t.Helper()
	svc := fixture.Service(t, ns, name, opts...)
	if ip == "" {
		return svc
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if err := testenv.Shared.Client.Status().Update(context.Background(), svc); err != nil {
		t.Fatalf("write status of %s/%s: %v", ns, name, err)
	}
	return svc
}
