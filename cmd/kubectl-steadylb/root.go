package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/inspect"
)

// options are the flags every command shares.
type options struct {
	kube          *kubeFlags
	allNamespaces bool
	output        string
	configNS      string
	lbClass       string
	out, errOut   io.Writer
	prof          *profiler
}

func newRoot(out, errOut io.Writer, prof *profiler) *cobra.Command {
	o := &options{kube: &kubeFlags{}, out: out, errOut: errOut, prof: prof}
	root := &cobra.Command{
		Use:   "kubectl-steadylb",
		Short: "See every load-balancer address, explain every pending Service, check a switch from MetalLB",
		Long: "kubectl steadylb answers from the cluster's current objects, read-only, with the same " +
			"configuration model, address book and decisions the steadylb controller runs.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return checkOutput(o.output)
		},
	}
	o.kube.bind(root.PersistentFlags())
	f := root.PersistentFlags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "show Services of every namespace")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, wide, json or yaml")
	f.StringVar(&o.configNS, "steadylb-namespace", "metallb-system", "namespace of the configuration objects (the controller's --namespace)")
	f.StringVar(&o.lbClass, "lb-class", "", "the controller's --lb-class")
	root.AddCommand(newPools(o), newAddresses(o), newExplain(o), newMigrate(o))
	return root
}

// cluster lists what the controller decides from, one LIST per kind.
func (o *options) cluster(ctx context.Context) (assign.Cluster, error) {
	cfg, err := o.kube.loader().ClientConfig()
	if err != nil {
		return assign.Cluster{}, fmt.Errorf("read kubeconfig: %w", err)
	}
	cfg.Wrap(o.prof.wrap)
	c, err := inspect.Connect(cfg)
	if err != nil {
		return assign.Cluster{}, err
	}
	var (
		cl    assign.Cluster
		notes []string
	)
	o.prof.phase("load", func() {
		cl, notes, err = inspect.Load(ctx, c, inspect.Source{Namespace: o.configNS, LBClass: o.lbClass})
	})
	for _, n := range notes {
		fmt.Fprintln(o.errOut, n)
	}
	return cl, err
}

// state loads the cluster and replays the controller over it, keeping
// the decisions the command's view reads.
func (o *options) state(ctx context.Context, keep inspect.Keep) (*inspect.State, error) {
	c, err := o.cluster(ctx)
	if err != nil {
		return nil, err
	}
	return o.replay(c, keep)
}

// replay replays the controller over a loaded cluster, keeping the
// decisions keep picks.
func (o *options) replay(c assign.Cluster, keep inspect.Keep) (*inspect.State, error) {
	var (
		s   *inspect.State
		err error
	)
	o.prof.phase("replay", func() { s, err = inspect.NewState(c, keep) })
	switch {
	case errors.Is(err, assign.ErrNoPools):
		return nil, fmt.Errorf("%w in namespace %s: the controller allocates and clears nothing until one does "+
			"(is --steadylb-namespace the controller's --namespace?)", err, o.configNS)
	case err != nil:
		return nil, fmt.Errorf("%w\n(in namespace %s; the controller keeps running on its last valid configuration, "+
			"which the plugin cannot read back)", err, o.configNS)
	}
	return s, nil
}

// namespace is the -n flag, or the kubeconfig's namespace.
func (o *options) namespace() (string, error) {
	ns, _, err := o.kube.loader().Namespace()
	if err != nil {
		return "", fmt.Errorf("read the namespace from kubeconfig: %w", err)
	}
	return ns, nil
}

// namespaceFilter is "" (every namespace) unless -n was given.
func (o *options) namespaceFilter() string {
	if o.allNamespaces {
		return ""
	}
	return o.kube.overrides.Context.Namespace
}
