package speaker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// joiner finds the other speakers the way MetalLB does, by listing the
// speaker Pods (--ml-labels) in the namespace, and joins the membership to
// the IPs it has not joined yet. Gossip spreads the rest; joining every
// new Pod only makes a fresh speaker, or one back from a partition, find
// the others at once.
type joiner struct {
	reader    client.Reader
	members   Membership
	namespace string
	node      string
	selector  labels.Selector
	port      int
	log       logr.Logger
	// trigger asks run for a pass, coalesced.
	trigger chan struct{}

	mu sync.Mutex
	// joined are the addresses a Join has succeeded with, for Pods that
	// still exist.
	joined map[string]bool
}

// poke asks for a pass without blocking.
func (j *joiner) poke() {
	select {
	case j.trigger <- struct{}{}:
	default:
	}
}

// run joins on every poke until ctx ends, retrying failures with backoff.
func (j *joiner) run(ctx context.Context) {
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: time.Minute}
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-j.trigger:
		case <-retry:
		}
		retry = nil
		if err := j.joinAll(ctx); err != nil {
			delay := backoff.Step()
			j.log.Error(err, "join the other speakers", "retryIn", delay)
			retry = time.After(delay)
			continue
		}
		backoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: time.Minute}
	}
}

// joinAll joins the addresses of speaker Pods not joined yet.
func (j *joiner) joinAll(ctx context.Context) error {
	var pods corev1.PodList
	if err := j.reader.List(ctx, &pods, client.InNamespace(j.namespace), client.MatchingLabelsSelector{Selector: j.selector}); err != nil {
		return fmt.Errorf("list speaker pods: %w", err)
	}
	current := peerAddresses(pods.Items, j.node, j.port)

	j.mu.Lock()
	defer j.mu.Unlock()
	for a := range j.joined {
		if !slices.Contains(current, a) {
			delete(j.joined, a) // a Pod that comes back is joined again
		}
	}
	var fresh []string
	for _, a := range current {
		if !j.joined[a] {
			fresh = append(fresh, a)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	n, err := j.members.Join(fresh)
	if err != nil {
		return fmt.Errorf("join %v: %w", fresh, err)
	}
	for _, a := range fresh {
		j.joined[a] = true
	}
	j.log.Info("joined speakers", "addresses", fresh, "answered", n)
	return nil
}

// peerAddresses are the join addresses of the speaker Pods on other nodes
// that are not being deleted, sorted.
func peerAddresses(pods []corev1.Pod, self string, port int) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == self || p.DeletionTimestamp != nil {
			continue
		}
		for _, ip := range podAddresses(p) {
			if port > 0 {
				ip = net.JoinHostPort(ip, strconv.Itoa(port))
			}
			out = append(out, ip)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
