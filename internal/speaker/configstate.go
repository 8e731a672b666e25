package speaker

import (
	"context"
	"errors"
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
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgppasswords"
	"github.com/steadylb/steadylb/internal/speaker/facts"
)

// reloadConfig reads the configuration and builds the model. A
// configuration with a broken pool or L2Advertisement is never used: the
// speaker keeps the last valid one (as the controller and MetalLB do),
// because dropping the broken object could silence addresses in use.
// Errors confined to the BGP kinds (a peer, an advertisement, a BFD
// profile, a community) are different: the objects at fault are left out
// and everything else runs, so one bad peer harms no other session. It
// reports whether the configuration in use changed.
func (s *Speaker) reloadConfig(ctx context.Context) (bool, error) {
	snap, fp, err := s.readConfig(ctx)
	if err != nil {
		return false, err
	}
	if fp == s.cfgFingerprint {
		return false, nil
	}
	s.cfgFingerprint = fp
	cfg, err := config.Build(snap)
	s.cfgErr = err
	if err != nil && !onlyBGPErrors(err) {
		s.metrics.configuration(false)
		s.log.Info("configuration is invalid; keeping the last valid one", "errors", err.Error())
		return false, nil
	}
	s.metrics.configuration(true)
	if err != nil {
		s.log.Info("BGP objects are invalid; running without them", "errors", err.Error())
	}
	s.cfg = cfg
	s.log.Info("configuration loaded", "pools", len(cfg.Pools()), "l2Advertisements", len(cfg.L2Advertisements()),
		"bgpAdvertisements", len(cfg.BGPAdvertisements()), "bgpPeers", len(cfg.Peers()))
	return true, nil
}

// readConfig lists the configuration objects from the cache, gets the
// password Secrets the BGPPeers name, and returns the fingerprint of what
// it read. The BGP kinds are read only when the
// speaker runs BGP.
func (s *Speaker) readConfig(ctx context.Context) (config.Snapshot, string, error) {
	var snap config.Snapshot
	var pools v1beta1.IPAddressPoolList
	var l2 v1beta1.L2AdvertisementList
	lists := []client.ObjectList{&pools, &l2}
	var bgpAds v1beta1.BGPAdvertisementList
	var peers v1beta2.BGPPeerList
	var bfds v1beta1.BFDProfileList
	var communities v1beta1.CommunityList
	if s.bgp != nil {
		lists = append(lists, &bgpAds, &peers, &bfds, &communities)
	}
	for _, l := range lists {
		if err := s.cache.List(ctx, l, client.InNamespace(s.opts.Namespace)); err != nil {
			return snap, "", fmt.Errorf("list %T: %w", l, err)
		}
	}
	snap = config.Snapshot{Pools: pools.Items, L2Advertisements: l2.Items, BGPAdvertisements: bgpAds.Items,
		Peers: peers.Items, BFDProfiles: bfds.Items, Communities: communities.Items}
	var parts []string
	for _, items := range [][]metav1.Object{metas(pools.Items), metas(l2.Items), metas(bgpAds.Items), metas(peers.Items),
		metas(bfds.Items), metas(communities.Items)} {
		for _, m := range items {
			parts = append(parts, objectPrint(m))
		}
	}
	slices.Sort(parts)
	objects := strings.Join(parts, "\n")
	if s.passwords == nil {
		return snap, objects, nil
	}
	// internal/speaker/bgppasswords says when the Secrets are read again.
	changed := objects != s.cfgObjects
	s.cfgObjects = objects
	secrets, next := s.passwords.Read(ctx, bgppasswords.SecretNames(peers.Items), changed)
	snap.PasswordSecrets = secrets
	if next > 0 {
		s.queue.AddAfter(reloadConfig, next)
	}
	parts = bgppasswords.Prints(secrets)
	slices.Sort(parts)
	return snap, objects + "\n" + strings.Join(parts, "\n"), nil
}

// onlyBGPErrors reports whether every problem is with a BGP kind.
func onlyBGPErrors(err error) bool {
	var list config.ErrorList
	if !errors.As(err, &list) {
		return false
	}
	for _, e := range list {
		switch e.Kind {
		case config.KindBGPAdvertisement, config.KindBGPPeer, config.KindBFDProfile, config.KindCommunity:
		default:
			return false
		}
	}
	return true
}

func metas[T any, P interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// objectPrint names an object's kind, name, UID, generation and labels
// (pool selectors read labels): equal fingerprints mean an unchanged
// configuration, whatever happened to the objects' status.
func objectPrint(m metav1.Object) string {
	return fmt.Sprintf("%T/%s/%s/%d/%s", m, m.GetName(), m.GetUID(), m.GetGeneration(), labels.Set(m.GetLabels()).String())
}
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
// verdict changed since the last write.
func (s *Speaker) reportState(ctx context.Context, self *facts.Node) error {
	want := s.desiredState(self)
	s.metrics.invalid.Set(boolGauge(want.Result == v1beta1.ConfigurationInvalid))
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
func (s *Speaker) selfFacts(ctx context.Context) *facts.Node {
	node := &corev1.Node{}
	if err := s.cache.Get(ctx, types.NamespacedName{Name: s.opts.NodeName}, node); err != nil {
		return nil
	}
	f := s.nodeFacts(node)
	return &f
}
