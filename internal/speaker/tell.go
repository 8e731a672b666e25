package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/internal/speaker/election"
	"github.com/steadylb/steadylb/internal/speaker/l2decide"
)

// Event reasons, MetalLB's, so that alerts written for it keep working.
const (
	EventNodeAssigned   = "nodeAssigned"
	EventAnnounceFailed = "announceFailed"
)

// tell reports the round: metrics and nodeAssigned events for what this
// node now announces, announceFailed for what stopped it, and the
// ConfigurationState.
func (r *roundRun) tell(affected []types.NamespacedName, decisions map[netip.Addr]l2decide.Decision) {
	s := r.s
	for _, a := range sortedAddrSet(decisions) {
		if decisions[a].Reason == l2decide.NotInAnyPool && r.reportsUnannounced(a) {
			for _, svc := range s.index.services(a) {
				r.warn(svc, "address %s is in no IPAddressPool, so it is not announced with protocol %q", a, protocolLayer2)
			}
		}
	}
	for _, svc := range affected {
		addrs := s.holding(svc)
		for _, a := range addrs {
			if len(s.answering[a]) == 0 {
				r.warn(svc, "no interface on node %q answers for %s with protocol %q", s.opts.NodeName, a, protocolLayer2)
			}
		}
		r.show(svc, protocolLayer2, s.shown, addrs)
		r.warnOnce(svc)
	}
	if r.scope.state {
		if err := s.reportState(r.ctx, s.selfFacts(r.ctx)); err != nil {
			s.log.Error(err, "report the configuration state")
			r.retry[rewriteState] = true
		}
	}
}

// reportsUnannounced elects the one live node that reports a problem with
// an address nobody announces, so the Service gets one event, not one per
// node.
func (r *roundRun) reportsUnannounced(a netip.Addr) bool {
	all := make([]election.Candidate, len(r.view.live))
	for i, n := range r.view.live {
		all[i] = election.Candidate{Node: n}
	}
	owner, ok := election.Owner(a, all)
	return ok && owner == r.s.opts.NodeName
}

// show updates the metrics for a Service's addresses announced with one
// protocol, shown being what they were, and sends nodeAssigned when this
// node starts announcing the Service with it.
func (r *roundRun) show(svc types.NamespacedName, protocol string, shown map[types.NamespacedName][]netip.Addr, addrs []netip.Addr) {
	s := r.s
	before := shown[svc]
	if slices.Equal(before, addrs) {
		return
	}
	var gone []netip.Addr
	for _, a := range before {
		if !slices.Contains(addrs, a) {
			gone = append(gone, a)
		}
	}
	s.metrics.withdraw(svc, protocol, gone)
	s.metrics.announce(svc, protocol, addrs)
	if len(addrs) == 0 {
		delete(shown, svc)
		return
	}
	shown[svc] = slices.Clone(addrs)
	if len(before) == 0 {
		r.event(svc, corev1.EventTypeNormal, EventNodeAssigned,
			fmt.Sprintf("announcing from node %q with protocol %q", s.opts.NodeName, protocol))
	}
}

func (r *roundRun) warn(svc types.NamespacedName, format string, args ...any) {
	r.warnings[svc] = append(r.warnings[svc], fmt.Sprintf(format, args...))
}

// warnOnce sends the round's warnings for a Service unless they are the
// ones already sent.
func (r *roundRun) warnOnce(svc types.NamespacedName) {
	s := r.s
	note := strings.Join(r.warnings[svc], "; ")
	if note == s.warned[svc] {
		return
	}
	if note == "" {
		delete(s.warned, svc)
		return
	}
	s.warned[svc] = note
	s.log.Info("cannot announce", "service", svc, "problem", note)
	r.event(svc, corev1.EventTypeWarning, EventAnnounceFailed, note)
}

func (r *roundRun) event(svc types.NamespacedName, kind, reason, note string) {
	obj, err := r.view.service(svc)
	if err != nil || obj == nil {
		return
	}
	r.s.events.Eventf(obj, nil, kind, reason, "Announce", "%s", note)
}

// forEach runs fn for every key, at most WriteParallelism at a time, and
// returns the errors by key.
func (s *Speaker) forEach(ctx context.Context, keys []types.NamespacedName, fn func(context.Context, types.NamespacedName) error) map[types.NamespacedName]error {
	failed := map[types.NamespacedName]error{}
	if len(keys) == 1 {
		if err := fn(ctx, keys[0]); err != nil {
			failed[keys[0]] = err
		}
		return failed
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, s.opts.WriteParallelism)
	)
	for _, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, k); err != nil {
				mu.Lock()
				failed[k] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}
