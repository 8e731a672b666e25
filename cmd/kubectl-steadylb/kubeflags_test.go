package main

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestKubeFlags: kubectl's connection flags reach the client's
// configuration as kubectl applies them, over a kubeconfig with two
// contexts.
func TestKubeFlags(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	tests := []struct {
		name  string
		args  []string
		check func(*rest.Config, string) bool
	}{
		{"the kubeconfig's current context", nil,
			func(c *rest.Config, ns string) bool { return c.Host == "https://a.example:6443" && ns == "team-a" }},
		{"--context", []string{"--context", "b"},
			func(c *rest.Config, ns string) bool { return c.Host == "https://b.example:6443" && ns == "team-b" }},
		{"-n", []string{"-n", "other"},
			func(c *rest.Config, ns string) bool { return ns == "other" }},
		{"--namespace", []string{"--namespace", "other"},
			func(c *rest.Config, ns string) bool { return ns == "other" }},
		{"-s", []string{"-s", "https://c.example:6443"},
			func(c *rest.Config, _ string) bool { return c.Host == "https://c.example:6443" }},
		{"--token", []string{"--token", "t0k"},
			func(c *rest.Config, _ string) bool { return c.BearerToken == "t0k" }},
		{"--request-timeout", []string{"--request-timeout", "5s"},
			func(c *rest.Config, _ string) bool { return c.Timeout == 5*time.Second }},
		{"impersonation", []string{"--as", "jane", "--as-group", "ops", "--as-group", "dev", "--as-uid", "42",
			"--as-user-extra", "scope=a", "--as-user-extra", "scope=b", "--as-user-extra", "malformed"},
			func(c *rest.Config, _ string) bool {
				return reflect.DeepEqual(c.Impersonate, rest.ImpersonationConfig{UserName: "jane", UID: "42",
					Groups: []string{"ops", "dev"}, Extra: map[string][]string{"scope": {"a", "b"}}})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k kubeFlags
			flags := pflag.NewFlagSet("test", pflag.ContinueOnError)
			k.bind(flags)
			if err := flags.Parse(append([]string{"--kubeconfig", kubeconfig}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := k.loader().ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			ns, _, err := k.loader().Namespace()
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg, ns) {
				t.Errorf("%v: host %s, namespace %s, token %q, timeout %v, impersonate %+v", tt.args,
					cfg.Host, ns, cfg.BearerToken, cfg.Timeout, cfg.Impersonate)
			}
		})
	}
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"a", "b"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example:6443"}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "team-" + name}
	}
	cfg.CurrentContext = "a"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
