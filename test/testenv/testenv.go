// Package testenv starts the local control plane for integration tests: a
// real kube-apiserver and etcd, built from Go modules by
// hack/control-plane.sh, with steadylb's CRDs installed.
//
// Suites start one control plane per test binary from TestMain. When the
// binaries have not been built yet the suite fails with the command that
// builds them: a suite that skipped would report ok having proved nothing.
// `make unit` runs the tests that need no control plane.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/steadylb/steadylb/api/v1alpha1"
	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
)

// Namespace is where the suites put steadylb's configuration objects.
const Namespace = "metallb-system"

// ErrNotBuilt means hack/control-plane.sh has not built the binaries yet.
var ErrNotBuilt = errors.New("local control plane not built: run `make control-plane` once (about 10 minutes), " +
	"or `make unit` for the tests that need no control plane")

// Env is a running control plane and clients for it.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	// Kubeconfig is the path of a kubeconfig file for the control plane.
	Kubeconfig string
	// Kubectl is the path of the kubectl binary built with the control plane.
	Kubectl string
	// RepoRoot is the root of the steadylb checkout.
	RepoRoot string

	env *envtest.Environment
	dir string
}

// Scheme returns a scheme with the built-in Kubernetes types and steadylb's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme, v1beta2.AddToScheme,
		v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// Options adjust the control plane for suites that need more than the
// defaults.
type Options struct {
	// APIServerArgs are extra kube-apiserver flags, without the leading
	// dashes, replacing envtest's value for the same flag. Benchmarks need
	// this: envtest's --service-cluster-ip-range is a /24, too small for
	// thousands of Services.
	APIServerArgs map[string]string
	// NoCRDs leaves steadylb's CRDs out, for a suite that checks what a
	// client says to a cluster without them.
	NoCRDs bool
}

// Start starts kube-apiserver and etcd, installs the CRDs from
// config/crd/bases and creates the metallb-system namespace.
func Start() (*Env, error) {
	return StartWith(Options{})
}

// StartWith is Start with options.
func StartWith(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	if opts.NoCRDs {
		te.CRDDirectoryPaths = nil
	}
	for flag, value := range opts.APIServerArgs {
		te.ControlPlane.GetAPIServer().Configure().Set(flag, value)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("start control plane from %s: %w", assets, err)
	}
	e := &Env{Config: cfg, Scheme: scheme, Kubectl: filepath.Join(assets, "kubectl"), RepoRoot: root, env: te}
	if err := e.finishSetup(); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) finishSetup() error {
	c, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	e.Client = c
	if e.dir, err = os.MkdirTemp("", "steadylb-testenv-"); err != nil {
		return fmt.Errorf("create kubeconfig directory: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, e.env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(context.Background(), ns); err != nil {
		return fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	return nil
}

// Stop stops the control plane and removes its files.
func (e *Env) Stop() error {
	err := e.env.Stop()
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}

// UserKubeconfig writes a kubeconfig for a new user with no permissions
// of its own (no group), for tests of what a client without a permission
// is told. It returns the file's path, removed with the control plane.
func (e *Env) UserKubeconfig(name string) (string, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return "", fmt.Errorf("add user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig of user %s: %w", name, err)
	}
	path := filepath.Join(e.dir, "kubeconfig-"+name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write kubeconfig of user %s: %w", name, err)
	}
	return path, nil
}

// KubectlCmd returns a kubectl command pointed at the control plane.
func (e *Env) KubectlCmd(args ...string) *exec.Cmd {
	return exec.Command(e.Kubectl, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
}

// RepoRoot finds the steadylb checkout by walking up to its go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/steadylb/steadylb\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no steadylb go.mod above the working directory")
		}
		dir = parent
	}
}

// AssetsDir returns the directory that holds kube-apiserver, etcd and
// kubectl: $KUBEBUILDER_ASSETS when set, else the cache directory that
// hack/control-plane.sh builds into. It fails with ErrNotBuilt when the
// binaries are missing.
func AssetsDir(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		out, err := exec.Command(filepath.Join(root, "hack", "control-plane.sh"), "--path").Output()
		if err != nil {
			return "", fmt.Errorf("ask hack/control-plane.sh for the assets directory: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, bin := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%w (missing %s in %s)", ErrNotBuilt, bin, dir)
		}
	}
	return dir, nil
}
