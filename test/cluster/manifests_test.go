package cluster_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/steadylb/steadylb/test/cluster"
)

// procStatus reads the fields of /proc/<pid>/status that a security
// context decides.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// TestManifestsDriveTheProcesses: the controller replicas and the speakers
// start from the rendered Deployment and DaemonSet (args, env, the
// memberlist Secret and the service account token as files) and become
// ready under the identity and privileges the manifests give them: the
// speaker as root with NET_RAW and nothing else, the controller as 65534
// with no capability, both without privilege escalation.
func TestManifestsDriveTheProcesses(t *testing.T) {
	c := cluster.Require(t)
	s := c.StartSteadylb(t)
	if len(s.Controllers) != 2 || len(s.Speakers) != len(c.Lab.Nodes) {
		t.Fatalf("%d controllers and %d speakers, want 2 and %d", len(s.Controllers), len(s.Speakers), len(c.Lab.Nodes))
	}
	const netRaw = "0000000000002000" // bit 13
	for _, sp := range s.Speakers {
		st := procStatus(t, sp.Pid())
		if st["Uid"] != "0 0 0 0" || st["CapEff"] != netRaw || st["CapBnd"] != netRaw || st["NoNewPrivs"] != "1" {
			t.Errorf("speaker on %s: Uid %q CapEff %q CapBnd %q NoNewPrivs %q; want root, only NET_RAW, no new privileges",
				sp.Node.Name, st["Uid"], st["CapEff"], st["CapBnd"], st["NoNewPrivs"])
		}
	}
	for _, ctl := range s.Controllers {
		st := procStatus(t, ctl.Pid())
		if st["Uid"] != "65534 65534 65534 65534" || st["CapEff"] != "0000000000000000" || st["NoNewPrivs"] != "1" {
			t.Errorf("controller %s: Uid %q CapEff %q NoNewPrivs %q; want 65534, no capability, no new privileges",
				ctl.Pod.Name, st["Uid"], st["CapEff"], st["NoNewPrivs"])
		}
	}
}
