package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/steadylb/steadylb/internal/inspect"
)

func newMigrate(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Before switching from MetalLB: every Service whose address steadylb would treat differently",
		Long: "migrate replays steadylb's startup over the cluster as it stands and reports every Service " +
			"steadylb would treat differently. It changes nothing. It exits 1 when switching would change " +
			"an address or steadylb refuses the configuration, 0 when it is safe.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.cluster(cmd.Context())
			if err != nil {
				return err
			}
			var m inspect.Migration
			o.prof.phase("replay and compare", func() { m, err = inspect.Migrate(c) })
			if err != nil {
				return fmt.Errorf("%w in namespace %s: nothing to compare (is --steadylb-namespace where MetalLB's pools are?)",
					err, o.configNS)
			}
			if done, err := structured(o.out, o.output, m); done || err != nil {
				return safeOr(m, err)
			}
			return safeOr(m, o.printMigration(m))
		},
	}
}

// safeOr turns an unsafe migration into errChanges once it is printed.
func safeOr(m inspect.Migration, err error) error {
	if err == nil && !m.Safe() {
		return errChanges
	}
	return err
}

func (o *options) printMigration(m inspect.Migration) error {
	w := o.out
	for _, e := range m.ConfigErrors {
		fmt.Fprintf(w, "configuration refused: %s\n", e)
	}
	if len(m.ConfigErrors) > 0 {
		fmt.Fprintln(w, "steadylb would allocate and clear nothing until the configuration is fixed.")
		return nil
	}
	if len(m.Findings) > 0 {
		t := newTable(w, "SERVICE", "FINDING", "NOW", "AFTER", "DETAIL")
		for _, f := range m.Findings {
			t.row(f.Service, f.Kind, orDash(f.Now), orDash(f.After), f.Detail)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if m.Changed > 0 {
		fmt.Fprintf(w, "%d Service(s) would change address: switching is not safe as the cluster stands.\n", m.Changed)
	} else {
		fmt.Fprintln(w, "No address would change: switching is safe as the cluster stands.")
	}
	return nil
}
