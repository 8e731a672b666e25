package speaker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/configstate"
	"github.com/steadylb/steadylb/internal/speaker/facts"
)

func (s *Speaker) stateName() string { return "speaker-" + s.opts.NodeName }

// desiredState is the verdict: the configuration's errors, the interface
// exclusions' errors, then the interfaces advertisements list that this
// host lacks, one per line.
func (s *Speaker) desiredState(self *facts.Node) v1beta1.ConfigurationStateStatus {
	var problems []string
	if s.cfgErr != nil {
		problems = append(problems, s.cfgErr.Error())
	}
	problems = append(problems, s.bgp.problems()...)
	problems = append(problems, s.exclusions.Problems()...)
	problems = append(problems, s.missingInterfaces(self)...)
	if len(problems) == 0 {
		return v1beta1.ConfigurationStateStatus{Result: v1beta1.ConfigurationValid}
	}
	return v1beta1.ConfigurationStateStatus{Result: v1beta1.ConfigurationInvalid, ErrorSummary: strings.Join(problems, "\n")}
}

// missingInterfaces names, object and field, each interface the Announcer
// reported missing, for every advertisement that lists it and selects
// this node.
func (s *Speaker) missingInterfaces(self *facts.Node) []string {
	if len(s.missing) == 0 || s.cfg == nil {
		return nil
	}
	var out []string
	found := map[string]bool{}
	for _, ad := range s.cfg.L2Advertisements() {
		if self != nil && !ad.SelectsNode(self.Labels) {
			continue
		}
		for i, name := range ad.Interfaces() {
			if !slices.Contains(s.missing, name) {
				continue
			}
			found[name] = true
			e := config.FieldError{Kind: config.KindL2Advertisement, Name: ad.Name(),
				Field:  field.NewPath("spec", "interfaces").Index(i).String(),
				Detail: fmt.Sprintf("interface %q does not exist on node %q", name, s.opts.NodeName)}
			out = append(out, e.Error())
		}
	}
	for _, name := range s.missing {
		if !found[name] {
			out = append(out, fmt.Sprintf("interface %q does not exist on node %q", name, s.opts.NodeName))
		}
	}
	return out
}

// reportState writes the ConfigurationState "speaker-<node>" when the
// verdict changed since the last write. The verdict is patched, not
// compared with the cache's copy: the cache may not hold this speaker's
// last write yet, and a stale copy equal to the new verdict would leave
// that write standing (an error that stays reported after it was fixed).
func (s *Speaker) reportState(ctx context.Context, self *facts.Node) error {
	want := s.desiredState(self)
	s.metrics.invalid.Set(boolGauge(want.Result == v1beta1.ConfigurationInvalid))
	if s.stateShown != nil && configstate.Same(*s.stateShown, want) {
		return nil
	}
	key := types.NamespacedName{Namespace: s.opts.Namespace, Name: s.stateName()}
	labels := map[string]string{v1beta1.LabelComponentType: "speaker", v1beta1.LabelNodeName: s.opts.NodeName}
	if _, err := configstate.GetOrCreate(ctx, s.cache, s.client, key, labels); err != nil {
		return err
	}
	if err := configstate.Patch(ctx, s.client, key, want); err != nil {
		return err
	}
	s.stateShown = &want
	return nil
}

// selfFacts are this node's facts, nil when its Node object is missing.
func (s *Speaker) selfFacts(ctx context.Context) *facts.Node {
	node := &corev1.Node{}
	if err := s.cache.Get(ctx, types.NamespacedName{Name: s.opts.NodeName}, node); err != nil {
		return nil
	}
	f := s.nodeFacts(node)
	return &f
}
