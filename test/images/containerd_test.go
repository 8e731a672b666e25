package images

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// containerd is a containerd of the test's own: its own root, state and
// socket, with the CRI plugin off, so nothing of the machine's is touched.
type containerd struct {
	address string
}

func startContainerd(t *testing.T) *containerd {
	t.Helper()
	for _, bin := range []string{"containerd", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s (Debian package containerd)", bin)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte("version = 2\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &containerd{address: filepath.Join(dir, "containerd.sock")}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "containerd", "--config", config, "--root", filepath.Join(dir, "root"),
		"--state", filepath.Join(dir, "state"), "--address", c.address)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.ctr("version")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("containerd never answered: %v\n%s", err, log.String())
	}
	return c
}

func (c *containerd) ctr(args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"--address", c.address}, args...)...).CombinedOutput()
	return string(out), err
}

// TestContainerdImportsTheTarballs imports every tarball into containerd's
// k8s.io namespace, the one the kubelet uses, and finds each image there
// under its name and digest, unpacked for this machine's platform.
func TestContainerdImportsTheTarballs(t *testing.T) {
	a, _ := twice(t)
	c := startContainerd(t)
	for _, r := range a.results {
		if out, err := c.ctr("-n", "k8s.io", "images", "import", "--all-platforms", r.Tarball); err != nil {
			t.Fatalf("import %s: %v\n%s", r.Tarball, err, out)
		}
		out, err := c.ctr("-n", "k8s.io", "images", "ls")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, r.Tag+" ") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("containerd does not list %s:\n%s", r.Tag, out)
		}
		if !strings.Contains(line, r.Digest.String()) || !strings.Contains(line, "linux/amd64,linux/arm64") {
			t.Errorf("containerd lists %s as %q, want digest %s for linux/amd64 and linux/arm64", r.Tag, line, r.Digest)
		}
		if out, err := c.ctr("-n", "k8s.io", "images", "check", "name=="+r.Tag); err != nil || !strings.Contains(out, "complete") {
			t.Errorf("check %s: %v\n%s", r.Tag, err, out)
		}
	}
}
