package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/steadylb/steadylb/internal/inspect"
	"github.com/steadylb/steadylb/internal/ipam"
)

func newPools(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "pools",
		Short: "Per pool and family: size, assigned, free, and the Services waiting on it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := o.state(cmd.Context(), inspect.KeepWaiting)
			if err != nil {
				return err
			}
			rows := s.Pools()
			if done, err := structured(o.out, o.output, rows); done {
				return err
			}
			return o.printPools(rows)
		},
	}
}

// printPools prints the pools table; the reservation columns only when
// some pool has a reserved address.
func (o *options) printPools(rows []inspect.PoolRow) error {
	reserved := slices.ContainsFunc(rows, func(r inspect.PoolRow) bool { return r.Reserved != "0" })
	wide := o.output == "wide"
	header := []string{"POOL", "FAMILY", "SIZE", "ASSIGNED"}
	if reserved {
		header = append(header, "RESERVED")
	}
	header = append(header, "FREE", "WAITING")
	if wide {
		header = append(header, "AUTOASSIGN")
		if reserved {
			header = append(header, "RETAINED")
		}
	}
	t := newTable(o.out, header...)
	for _, r := range rows {
		cells := []string{r.Pool, r.Family, r.Size, r.Assigned}
		if reserved {
			cells = append(cells, r.Reserved)
		}
		cells = append(cells, r.Free, orDash(r.Waiting))
		if wide {
			cells = append(cells, strconv.FormatBool(r.AutoAssign))
			if reserved {
				cells = append(cells, r.Retained)
			}
		}
		t.row(cells...)
	}
	return t.flush()
}

func newAddresses(o *options) *cobra.Command {
	var free bool
	cmd := &cobra.Command{
		Use:   "addresses [POOL]",
		Short: "Every assigned address with its Services, pool and since when; --free lists the free spans",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := ""
			if len(args) == 1 {
				pool = args[0]
			}
			if free {
				s, err := o.state(cmd.Context(), inspect.KeepNone)
				if err != nil {
					return err
				}
				return o.printFree(s, pool)
			}
			rows, err := o.addressRows(cmd.Context(), inspect.Filter{Pool: pool, Namespace: o.namespaceFilter()})
			if err != nil {
				return err
			}
			return o.printAddresses(rows)
		},
	}
	cmd.Flags().BoolVar(&free, "free", false, "list the free addresses as spans instead")
	return cmd
}

// addressRows loads the cluster and makes the addresses view while the
// controller's decisions are replayed (inspect.AddressMaker).
func (o *options) addressRows(ctx context.Context, f inspect.Filter) ([]inspect.AddressRow, error) {
	c, err := o.cluster(ctx)
	if err != nil {
		return nil, err
	}
	am := inspect.MakeAddresses(f, len(c.Services))
	s, err := o.replay(c, am.Keep)
	rows, rowsErr := am.Rows(s)
	return rows, cmp.Or(err, rowsErr)
}

func (o *options) printAddresses(rows []inspect.AddressRow) error {
	if done, err := structured(o.out, o.output, rows); done {
		return err
	}
	reserved := slices.ContainsFunc(rows, func(r inspect.AddressRow) bool { return r.Reservation != nil })
	header := []string{"ADDRESS", "POOL", "SERVICES", "SINCE"}
	if o.output == "wide" {
		header = append(header, "SHARING")
	}
	if reserved {
		header = append(header, "RESERVATION")
	}
	t := newTable(o.out, header...)
	t.grow(len(rows))
	// One slice of cells for every row: the table copies them, and a new
	// slice each row went to the heap, 10,000 of them.
	var cells []string
	for _, r := range rows {
		cells = append(cells[:0], r.Address, r.Pool, orDash(r.Services), stamp(r.Since))
		if o.output == "wide" {
			cells = append(cells, orDash([]string{r.Sharing}[:min(1, len(r.Sharing))]))
		}
		if reserved {
			cells = append(cells, reservationCell(r.Reservation))
		}
		t.row(cells...)
	}
	return t.flush()
}

// reservationCell says which reservation keeps an address, for whom, and
// until when when it is retained.
func reservationCell(r *inspect.ReservedBy) string {
	switch {
	case r == nil:
		return "-"
	case r.Bound:
		return r.Name + " (bound)"
	case r.Retained && r.Until != nil:
		return fmt.Sprintf("%s, for %s, retained until %s", r.Name, r.Service, stamp(*r.Until))
	}
	return fmt.Sprintf("%s, for %s", r.Name, r.Service)
}

func (o *options) printFree(s *inspect.State, pool string) error {
	rows, err := s.Free(pool)
	if err != nil {
		return err
	}
	if done, err := structured(o.out, o.output, rows); done {
		return err
	}
	t := newTable(o.out, "POOL", "FIRST", "LAST")
	for _, r := range rows {
		t.row(r.Pool, r.First, r.Last)
	}
	return t.flush()
}

func newExplain(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "explain SERVICE",
		Short: "Why a Service has its address, or has none, and what could change that",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			k := ipam.ServiceKey{Namespace: ns, Name: args[0]}
			s, err := o.state(cmd.Context(), inspect.KeepService(k))
			if err != nil {
				return err
			}
			e, err := s.Explain(k)
			if err != nil {
				return err
			}
			if done, err := structured(o.out, o.output, e); done {
				return err
			}
			return o.printExplanation(e)
		},
	}
}

func (o *options) printExplanation(e inspect.Explanation) error {
	w := o.out
	fmt.Fprintf(w, "Service:    %s\n", e.Service)
	fmt.Fprintf(w, "Shows:      %s\n", orDash(e.Shown))
	if len(e.Addresses) > 0 {
		fmt.Fprintf(w, "Decision:   %s from pool %q\n", orDash(e.Addresses), e.Pool)
	} else {
		fmt.Fprintf(w, "Decision:   no address\n")
	}
	fmt.Fprintf(w, "Reason:     %s: %s\n", e.Decision.Reason, e.Decision.Message)
	if e.Origin != "" {
		fmt.Fprintf(w, "From:       %s\n", e.Origin)
	}
	if e.Agrees {
		fmt.Fprintf(w, "Condition:  %s %s (agrees)\n", e.Recorded.Status, e.Recorded.Reason)
	} else {
		fmt.Fprintf(w, "Condition:  DISAGREES: %s\n", e.Disagreement)
	}
	for i, r := range e.Request {
		label := "Request:   "
		if i > 0 {
			label = "           "
		}
		fmt.Fprintf(w, "%s %s\n", label, r)
	}
	for _, r := range e.Reservations {
		fmt.Fprintf(w, "Reserved:   %s\n", r)
	}
	for _, r := range e.Refused {
		fmt.Fprintf(w, "Refused:    %s\n", r)
	}
	for _, r := range e.Warnings {
		fmt.Fprintf(w, "Warning:    %s\n", r)
	}
	fmt.Fprintln(w, "Pools:")
	t := newTable(w, "  POOL", "VERDICT", "WHY")
	for _, p := range e.Pools {
		t.row("  "+p.Pool, p.Verdict, p.Why)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if e.Hint != "" {
		fmt.Fprintf(w, "To change:  %s\n", e.Hint)
	}
	return nil
}
