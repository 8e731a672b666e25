package main

import (
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeFlags are kubectl's connection flags (--kubeconfig, --context, -n,
// -s, --token, --as and the rest), bound with client-go's clientcmd rather
// than cli-runtime's ConfigFlags: the same names and meanings, without
// linking cli-runtime, which brings kustomize and its resource builder
// (190 packages the plugin never calls, half its binary and about 400
// page faults at every start; BENCHMARKS.md). Left out: --cache-dir, the
// discovery cache, since the plugin makes no discovery request.
type kubeFlags struct {
	rules     clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	userExtra []string // --as-user-extra key=value, as kubectl reads it
	config    clientcmd.ClientConfig
}

func (k *kubeFlags) bind(flags *pflag.FlagSet) {
	k.rules = *clientcmd.NewDefaultClientConfigLoadingRules()
	k.rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	k.overrides.ClusterDefaults = clientcmd.ClusterDefaults
	flags.StringVar(&k.rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "",
		"the kubeconfig to read (else $KUBECONFIG, else ~/.kube/config)")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	// kubectl has no basic authentication flags.
	names.AuthOverrideFlags.Username.LongName, names.AuthOverrideFlags.Password.LongName = "", ""
	clientcmd.BindOverrideFlags(&k.overrides, flags, names)
	flags.StringArrayVar(&k.userExtra, "as-user-extra", nil,
		"an extra of the impersonated user, key=value; repeat it for more values or keys")
}

// loader reads the kubeconfig with the flags applied, as kubectl does;
// once the flags are parsed.
func (k *kubeFlags) loader() clientcmd.ClientConfig {
	if k.config != nil {
		return k.config
	}
	if len(k.userExtra) > 0 {
		extra := map[string][]string{}
		for _, kv := range k.userExtra {
			if key, value, ok := strings.Cut(kv, "="); ok {
				extra[key] = append(extra[key], value)
			}
		}
		k.overrides.AuthInfo.ImpersonateUserExtra = extra
	}
	k.config = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&k.rules, &k.overrides)
	return k.config
}
