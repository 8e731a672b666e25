package inspect

import (
	"net/netip"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// State is a cluster and the controller's replayed decisions over it,
// the input of every view.
type State struct {
	Cluster  assign.Cluster
	Replayed *assign.Replayed
	nsLabels map[string]labels.Set
	// objects indexes the listed Services by key, made at the first
	// lookup (earliestSince).
	objectsOnce sync.Once
	objects     map[ipam.ServiceKey]*corev1.Service
}

// Keep picks the decisions a State keeps once the replay is over: those
// its views read. Each view says which it needs; a State made with
// KeepAll answers every view.
type Keep func(*assign.Verdict) bool

var (
	// KeepAll keeps every decision.
	KeepAll Keep
	// KeepWaiting keeps the decisions that give a Service no address:
	// what Pools reads.
	KeepWaiting Keep = func(v *assign.Verdict) bool { return len(v.Addrs) == 0 }
	// KeepAssigned keeps the decisions that give a Service addresses:
	// what Addresses reads.
	KeepAssigned Keep = func(v *assign.Verdict) bool { return len(v.Addrs) > 0 }
	// KeepNone keeps no decision: Free reads only the book.
	KeepNone Keep = func(*assign.Verdict) bool { return false }
)

// KeepService keeps the decision for one Service: what Explain reads.
func KeepService(k ipam.ServiceKey) Keep {
	return func(v *assign.Verdict) bool { return v.Service == k }
}

// NewState replays the controller over a cluster, keeping the decisions
// keep picks. The error is Replay's: no pool, or a configuration the
// controller refuses.
func NewState(c assign.Cluster, keep Keep) (*State, error) {
	r, err := assign.ReplayKeeping(c, keep)
	if err != nil {
		return nil, err
	}
	s := &State{Cluster: c, Replayed: r, nsLabels: map[string]labels.Set{}}
	for _, ns := range c.Namespaces {
		s.nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	return s, nil
}

func (s *State) namespaceLabels(ns string) labels.Set {
	if l, ok := s.nsLabels[ns]; ok {
		return l
	}
	return labels.Set{}
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

func keyStrings(keys []ipam.ServiceKey) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}

// joinOr renders a list for a table cell; "-" when empty.
func joinOr(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	return strings.Join(items, ",")
}
