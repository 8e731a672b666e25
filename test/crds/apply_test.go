package crds

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steadylb/steadylb/test/testenv"
)

// TestKubectlApplyMetalLBYAML applies configuration written for MetalLB, one
// object of every kind, with the strict field validation kubectl uses by
// default: an unknown or misspelled field would fail the apply.
func TestKubectlApplyMetalLBYAML(t *testing.T) {
	env := testenv.Shared
	samples := filepath.Join("testdata", "metallb-samples.yaml")

	var stdout, stderr bytes.Buffer
	cmd := env.KubectlCmd("apply", "--validate=strict", "-f", samples)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl apply: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"ipaddresspool.metallb.io/production created",
		"ipaddresspool.metallb.io/spare created",
		"l2advertisement.metallb.io/l2-production created",
		"bgpadvertisement.metallb.io/bgp-production created",
		"bfdprofile.metallb.io/fast created",
		"community.metallb.io/communities created",
		"bgppeer.metallb.io/ibgp-router created",
		"bgppeer.metallb.io/unnumbered created",
		"bgppeer.metallb.io/legacy-router created",
		"servicel2status.metallb.io/l2-abcde created",
		"servicebgpstatus.metallb.io/bgp-abcde created",
		"configurationstate.metallb.io/controller created",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("kubectl apply output lacks %q:\n%s", want, stdout.String())
		}
	}
	if want := "metallb.io/v1beta1 BGPPeer is deprecated"; !strings.Contains(stderr.String(), want) {
		t.Errorf("kubectl apply warnings lack %q:\n%s", want, stderr.String())
	}

	// Applying the same file again must be a no-op: defaults and pruning
	// leave nothing for kubectl to change.
	stdout.Reset()
	stderr.Reset()
	cmd = env.KubectlCmd("apply", "-f", samples)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("second kubectl apply: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasSuffix(line, " unchanged") {
			t.Errorf("second apply changed something: %q", line)
		}
	}
}
