package inspect

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// What migrate can find about a Service.
const (
	// FindingDuplicate: its status shows an address an older Service
	// holds too, and they may not share it. The older one keeps it.
	FindingDuplicate = "duplicate"
	// FindingOutsidePools: its status shows an address no pool that may
	// serve it contains.
	FindingOutsidePools = "outside-pools"
	// FindingRefused: Restore refused an address of its status for
	// another reason (family, serviceAllocation).
	FindingRefused = "refused"
	// FindingRequestDiffers: its request, as steadylb reads it, asks for
	// other addresses than it has.
	FindingRequestDiffers = "request-differs"
	// FindingInvalidRequest: steadylb cannot read its request; it keeps
	// its addresses and reports InvalidRequest.
	FindingInvalidRequest = "invalid-request"
	// FindingStaleAnnotation: its ip-allocated-from-pool annotation names
	// another pool than the one its address is in; steadylb rewrites it.
	FindingStaleAnnotation = "stale-annotation"
	// FindingWouldAssign: it has no address and steadylb would give it
	// one.
	FindingWouldAssign = "would-assign"
)

// Finding is one Service that steadylb would treat differently from how
// the cluster shows it now.
type Finding struct {
	Service string `json:"service"`
	Kind    string `json:"kind"`
	// ChangesAddress is true when an address the Service shows would be
	// taken away or replaced.
	ChangesAddress bool     `json:"changesAddress"`
	Now            []string `json:"now"`
	After          []string `json:"after"`
	Detail         string   `json:"detail"`
}

// Migration is what switching to steadylb would do to the cluster.
type Migration struct {
	// ConfigErrors are the problems that make steadylb refuse the pools:
	// it would then allocate and clear nothing until they are fixed.
	ConfigErrors []string  `json:"configErrors,omitempty"`
	Findings     []Finding `json:"findings"`
	// Changed counts the Services whose addresses would change.
	Changed int `json:"changed"`
}

// Safe reports whether switching changes no address and steadylb accepts
// the configuration.
func (m Migration) Safe() bool { return m.Changed == 0 && len(m.ConfigErrors) == 0 }

// Migrate reports every Service whose address steadylb would treat
// differently, by replaying the controller's startup over a cluster
// another implementation (MetalLB) has served. It fails only when the
// cluster has no pool at all.
func Migrate(c assign.Cluster) (Migration, error) {
	m := Migration{Findings: []Finding{}}
	s, err := NewState(c, hasFindings)
	var invalid config.ErrorList
	switch {
	case errors.As(err, &invalid):
		for _, e := range invalid {
			m.ConfigErrors = append(m.ConfigErrors, e.Error())
		}
		return m, nil
	case err != nil:
		return m, err
	}
	m.addFindings(s)
	return m, nil
}

// addFindings adds the findings of every decision s kept.
func (m *Migration) addFindings(s *State) {
	for i := range s.Replayed.Verdicts {
		fs := findings(&s.Replayed.Verdicts[i])
		if slices.ContainsFunc(fs, func(f Finding) bool { return f.ChangesAddress }) {
			m.Changed++
		}
		m.Findings = append(m.Findings, fs...)
	}
}

// hasFindings keeps the decisions Migrate reports: most Services have no
// finding, and their decisions need not outlive the replay.
func hasFindings(v *assign.Verdict) bool { return findings(v) != nil }

// findings lists what steadylb treats differently about one Service.
// Most Services have none: what every finding of a Service shares is
// made at its first finding, not for each of the thousands without one.
func findings(v *assign.Verdict) []Finding {
	moved := len(v.Shown) > 0 && !slices.Equal(v.Shown, v.Addrs)
	var (
		out     []Finding
		base    *Finding
		outcome string
	)
	add := func(kind string, changes bool, detail string) {
		if base == nil {
			base = &Finding{Service: v.Service.String(), Now: addrStrings(v.Shown), After: addrStrings(v.Addrs)}
		}
		f := *base
		f.Kind, f.ChangesAddress, f.Detail = kind, changes, detail
		out = append(out, f)
	}
	phrase := func() string {
		if outcome == "" {
			outcome = outcomePhrase(*v)
		}
		return outcome
	}
	for _, c := range v.Refused {
		add(refusalKind(c), moved, fmt.Sprintf("%v; %s", c.Err, phrase()))
	}
	switch {
	case v.RequestErr != nil:
		add(FindingInvalidRequest, moved, fmt.Sprintf("%v; %s", v.RequestErr, phrase()))
	case moved && len(v.Refused) == 0:
		add(FindingRequestDiffers, true, fmt.Sprintf("the request (%s) asks for other addresses; %s",
			strings.Join(describeRequest(*v), "; "), phrase()))
	case len(v.Shown) == 0 && len(v.Addrs) > 0:
		add(FindingWouldAssign, false, phrase())
	}
	if pool, ok := v.Object.Annotations[assign.AnnotationAllocatedFromPool]; ok && len(v.Addrs) > 0 && pool != v.Pool {
		add(FindingStaleAnnotation, false, fmt.Sprintf("%s says %q but the address is in pool %q; steadylb rewrites it",
			assign.AnnotationAllocatedFromPool, pool, v.Pool))
	}
	return out
}

func refusalKind(c ipam.Conflict) string {
	switch {
	case errors.Is(c.Err, ipam.ErrRequestedIPInUse):
		return FindingDuplicate
	case errors.Is(c.Err, ipam.ErrNotInPool):
		return FindingOutsidePools
	}
	return FindingRefused
}

func outcomePhrase(v assign.Verdict) string {
	switch {
	case len(v.Addrs) == 0:
		return fmt.Sprintf("steadylb leaves it without an address (%s: %s)", v.Condition.Reason, v.Condition.Message)
	case slices.Equal(v.Shown, v.Addrs):
		return "steadylb keeps " + strings.Join(addrStrings(v.Addrs), ",")
	}
	return fmt.Sprintf("steadylb gives it %s from pool %q", strings.Join(addrStrings(v.Addrs), ","), v.Pool)
}
