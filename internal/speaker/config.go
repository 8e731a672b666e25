package speaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/speaker/bgppasswords"
	"github.com/steadylb/steadylb/internal/speaker/configprint"
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
	objects := configprint.Objects(snap)
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
	parts := bgppasswords.Prints(secrets)
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
