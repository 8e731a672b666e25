package inspect

import (
	"net/netip"
	"strings"

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
}

// NewState replays the controller over a cluster. The error is Replay's:
// no pool, or a configuration the controller refuses.
func NewState(c assign.Cluster) (*State, error) {
	r, err := assign.Replay(c)
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
