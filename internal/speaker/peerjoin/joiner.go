package peerjoin

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

// Members is the membership a Joiner joins: internal/speaker/membership.
type Members interface {
	// Join contacts peers ("host" or "host:port") and returns how many
	// answered.
	Join(addrs []string) (int, error)
	// Live returns the names of the live nodes, this one included.
	Live() []string
}

// Options configure a Joiner.
type Options struct {
	// Reader lists the speaker Pods.
	Reader  client.Reader
	Members Members
	// Namespace holds the speaker Pods; Selector picks them out.
	Namespace string
	Selector  labels.Selector
	// Node is this node's name: its own Pod is never joined.
	Node string
	// Port is the membership port added to each Pod IP; 0 joins bare IPs.
	Port int
	Log  logr.Logger
}

// Joiner joins the speakers that are not live members, on every Poke and
// every rejoinInterval: after a partition heals, each side has declared
// the other dead and memberlist itself would only find out at its next
// push/pull, tens of seconds later, while both sides may answer for the
// same addresses.
type Joiner struct {
	opts Options
	// trigger asks Run for a pass, coalesced.
	trigger chan struct{}
}

// New returns a Joiner; nothing happens until Run or JoinAll.
func New(opts Options) *Joiner {
	return &Joiner{opts: opts, trigger: make(chan struct{}, 1)}
}

// rejoinInterval spaces the passes that re-join speakers which are not
// live members. A pass with every speaker live sends nothing.
const rejoinInterval = 2 * time.Second

// Poke asks Run for a pass without blocking.
func (j *Joiner) Poke() {
	select {
	case j.trigger <- struct{}{}:
	default:
	}
}

// Run joins on every Poke and every rejoinInterval until ctx ends,
// retrying failures with backoff.
func (j *Joiner) Run(ctx context.Context) {
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
			if err := j.JoinAll(ctx); err != nil {
				j.opts.Log.V(1).Info("re-join the speakers that are not live members", "error", err.Error())
			}
			continue
		}
		retry = nil
		if err := j.JoinAll(ctx); err != nil {
			delay := backoff.Step()
			j.opts.Log.Error(err, "join the other speakers", "retryIn", delay)
			retry = time.After(delay)
			continue
		}
		backoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: time.Minute}
	}
}

// JoinAll joins, once, the addresses of the speaker Pods whose node is not
// a live member.
func (j *Joiner) JoinAll(ctx context.Context) error {
	pods, err := j.list(ctx)
	if err != nil {
		return err
	}
	live := j.opts.Members.Live()
	var missing []corev1.Pod
	for _, p := range pods.Items {
		if !slices.Contains(live, p.Spec.NodeName) {
			missing = append(missing, p)
		}
	}
	addrs := peerAddresses(missing, j.opts.Node, j.opts.Port)
	if len(addrs) == 0 {
		return nil
	}
	n, err := j.opts.Members.Join(addrs)
	if err != nil {
		return fmt.Errorf("join %v: %w", addrs, err)
	}
	if n > 0 {
		j.opts.Log.Info("joined speakers", "addresses", addrs, "answered", n)
	}
	return nil
}

// OthersExist reports whether speaker Pods run on other nodes, so that a
// starting speaker has someone to wait for. A failed read counts as yes:
// waiting is the safe side.
func (j *Joiner) OthersExist(ctx context.Context) bool {
	pods, err := j.list(ctx)
	if err != nil {
		return true
	}
	return len(peerAddresses(pods.Items, j.opts.Node, 0)) > 0
}

func (j *Joiner) list(ctx context.Context) (*corev1.PodList, error) {
	var pods corev1.PodList
	err := j.opts.Reader.List(ctx, &pods, client.InNamespace(j.opts.Namespace), client.MatchingLabelsSelector{Selector: j.opts.Selector})
	if err != nil {
		return nil, fmt.Errorf("list speaker pods: %w", err)
	}
	return &pods, nil
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

// Matters reports whether a change to a speaker Pod may change whom to
// join: its IPs, or its deletion.
func Matters(old, new *corev1.Pod) bool {
	return !slices.Equal(podAddresses(old), podAddresses(new)) || (old.DeletionTimestamp == nil) != (new.DeletionTimestamp == nil)
}

// podAddresses are a Pod's IPs, status.podIPs or else status.podIP.
func podAddresses(p *corev1.Pod) []string {
	var out []string
	for _, ip := range p.Status.PodIPs {
		out = append(out, ip.IP)
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		out = append(out, p.Status.PodIP)
	}
	return out
}
