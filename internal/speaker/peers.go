package speaker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// joiner finds the other speakers the way MetalLB does, by listing the
// speaker Pods (--ml-labels) in the namespace, and joins the membership to
// the IPs of those whose node is not a live member. Gossip spreads the
// rest; joining makes a fresh speaker find the others at once. It also
// runs every rejoinInterval: after a partition heals, each side has
// declared the other dead and memberlist itself would only find out at its
// next push/pull, tens of seconds later, while both sides may answer for
// the same addresses.
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
}

// rejoinInterval spaces the passes that re-join speakers which are not
// live members. A pass with every speaker live sends nothing.
const rejoinInterval = 2 * time.Second

// poke asks for a pass without blocking.
func (j *joiner) poke() {
	select {
	case j.trigger <- struct{}{}:
	default:
	}
}

// run joins on every poke and every rejoinInterval until ctx ends,
// retrying failures with backoff.
func (j *joiner) run(ctx context.Context) {
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: time.Minute}
	tick := time.NewTicker(rejoinInterval)
	defer tick.Stop()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-j.trigger:
		case <-retry:
		case <-tick.C:
			// A speaker that is down for good fails this every time:
			// not worth an error line each pass.
			if err := j.joinAll(ctx); err != nil {
				j.log.V(1).Info("re-join the speakers that are not live members", "error", err.Error())
			}
			continue
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

// joinAll joins the addresses of the speaker Pods whose node is not a live
// member.
func (j *joiner) joinAll(ctx context.Context) error {
	var pods corev1.PodList
	if err := j.reader.List(ctx, &pods, client.InNamespace(j.namespace), client.MatchingLabelsSelector{Selector: j.selector}); err != nil {
		return fmt.Errorf("list speaker pods: %w", err)
	}
	live := j.members.Live()
	var missing []corev1.Pod
	for _, p := range pods.Items {
		if !slices.Contains(live, p.Spec.NodeName) {
			missing = append(missing, p)
		}
	}
	addrs := peerAddresses(missing, j.node, j.port)
	if len(addrs) == 0 {
		return nil
	}
	n, err := j.members.Join(addrs)
	if err != nil {
		return fmt.Errorf("join %v: %w", addrs, err)
	}
	if n > 0 {
		j.log.Info("joined speakers", "addresses", addrs, "answered", n)
	}
	return nil
}

// othersExist reports whether speaker Pods run on other nodes, so that a
// starting speaker has someone to wait for. A failed read counts as yes:
// waiting is the safe side.
func (j *joiner) othersExist(ctx context.Context) bool {
	var pods corev1.PodList
	if err := j.reader.List(ctx, &pods, client.InNamespace(j.namespace), client.MatchingLabelsSelector{Selector: j.selector}); err != nil {
		return true
	}
	return len(peerAddresses(pods.Items, j.node, 0)) > 0
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
