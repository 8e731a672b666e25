package speaker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
)

// reloadConfig reads the pools and layer-2 advertisements and builds the
// model. An invalid configuration is never used: the speaker keeps the
// last valid one (as the controller and MetalLB do), because dropping the
// broken object could silence addresses in use. It reports whether the
// configuration in use changed.
func (s *Speaker) reloadConfig(ctx context.Context) (bool, error) {
	var pools v1beta1.IPAddressPoolList
	if err := s.cache.List(ctx, &pools, client.InNamespace(s.opts.Namespace)); err != nil {
		return false, fmt.Errorf("list IPAddressPools: %w", err)
	}
	var ads v1beta1.L2AdvertisementList
	if err := s.cache.List(ctx, &ads, client.InNamespace(s.opts.Namespace)); err != nil {
		return false, fmt.Errorf("list L2Advertisements: %w", err)
	}
	fp := fingerprint(pools.Items, ads.Items)
	if fp == s.cfgFingerprint {
		return false, nil
	}
	s.cfgFingerprint = fp
	cfg, err := config.Build(config.Snapshot{Pools: pools.Items, L2Advertisements: ads.Items})
	s.metrics.configuration(err == nil)
	if err != nil {
		s.cfgErr = err
		s.log.Info("configuration is invalid; keeping the last valid one", "errors", err.Error())
		return false, nil
	}
	s.cfg, s.cfgErr = cfg, nil
	s.log.Info("configuration loaded", "pools", len(cfg.Pools()), "l2Advertisements", len(cfg.L2Advertisements()))
	return true, nil
}

// fingerprint names every object's UID, generation and labels (pool
// selectors read labels): equal fingerprints mean an unchanged
// configuration, whatever happened to the objects' status.
func fingerprint(pools []v1beta1.IPAddressPool, ads []v1beta1.L2Advertisement) string {
	var parts []string
	for i := range pools {
		parts = append(parts, objectPrint("pool", &pools[i].ObjectMeta))
	}
	for i := range ads {
		parts = append(parts, objectPrint("l2", &ads[i].ObjectMeta))
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

func objectPrint(kind string, m *metav1.ObjectMeta) string {
	return fmt.Sprintf("%s/%s/%s/%d/%s", kind, m.Name, m.UID, m.Generation, labels.Set(m.Labels).String())
}

func (s *Speaker) stateName() string { return "speaker-" + s.opts.NodeName }

// desiredState is the verdict: the configuration's errors, then the
// interfaces advertisements list that this host lacks, one per line.
func (s *Speaker) desiredState(self *nodeFacts) v1beta1.ConfigurationStateStatus {
	var problems []string
	if s.cfgErr != nil {
		problems = append(problems, s.cfgErr.Error())
	}
	problems = append(problems, s.missingInterfaces(self)...)
	if len(problems) == 0 {
		return v1beta1.ConfigurationStateStatus{Result: v1beta1.ConfigurationValid}
	}
	return v1beta1.ConfigurationStateStatus{Result: v1beta1.ConfigurationInvalid, ErrorSummary: strings.Join(problems, "\n")}
}

// missingInterfaces names, object and field, each interface the Announcer
// reported missing, for every advertisement that lists it and selects
// this node.
func (s *Speaker) missingInterfaces(self *nodeFacts) []string {
	if len(s.missing) == 0 || s.cfg == nil {
		return nil
	}
	var out []string
	found := map[string]bool{}
	for _, ad := range s.cfg.L2Advertisements() {
		if self != nil && !ad.SelectsNode(self.labels) {
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
// verdict changed since the last write.
func (s *Speaker) reportState(ctx context.Context, self *nodeFacts) error {
	want := s.desiredState(self)
	if s.stateShown != nil && s.stateShown.Result == want.Result && s.stateShown.ErrorSummary == want.ErrorSummary {
		return nil
	}
	key := types.NamespacedName{Namespace: s.opts.Namespace, Name: s.stateName()}
	state := &v1beta1.ConfigurationState{}
	err := s.cache.Get(ctx, key, state)
	if apierrors.IsNotFound(err) {
		state = &v1beta1.ConfigurationState{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{v1beta1.LabelComponentType: "speaker", v1beta1.LabelNodeName: s.opts.NodeName}}}
		err = s.client.Create(ctx, state)
	}
	if err != nil {
		return fmt.Errorf("get or create ConfigurationState %s: %w", key, err)
	}
	if state.Status.Result != want.Result || state.Status.ErrorSummary != want.ErrorSummary {
		next := state.DeepCopy()
		next.Status.Result, next.Status.ErrorSummary = want.Result, want.ErrorSummary
		if err := s.client.Status().Update(ctx, next); err != nil {
			return fmt.Errorf("update ConfigurationState %s: %w", key, err)
		}
	}
	s.stateShown = &want
	return nil
}

// selfFacts are this node's facts, nil when its Node object is missing.
func (s *Speaker) selfFacts(ctx context.Context) *nodeFacts {
	node := &corev1.Node{}
	if err := s.cache.Get(ctx, types.NamespacedName{Name: s.opts.NodeName}, node); err != nil {
		return nil
	}
	f := nodeFactsOf(node)
	return &f
}
