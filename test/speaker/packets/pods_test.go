package packets

import (
	"context"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/lab"
)

// podInterval paces each node's pod starts in the tests, faster than a
// busy node's kubelet would (the reproduction started one every
// 300 ms); benchPodInterval in the benchmarks, where every process also
// takes CPU from the speakers being measured.
const (
	podInterval      = 200 * time.Millisecond
	benchPodInterval = time.Second
)

// podChurn starts and stops pods on lab nodes, by the CNI bridge plugin,
// until stopped: each node starts a pod every podInterval and stops the
// one before, so every start and stop creates or deletes a veth on the
// node, brings it up and enslaves it to cni0.
type podChurn struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started map[string]*atomic.Int64
	mu      sync.Mutex
	errs    []error
}

// churnPods starts a podChurn on every lab node, a pod every interval on
// each; the test's cleanup stops it if the test does not.
func (c *cluster) churnPods(interval time.Duration) *podChurn {
	c.t.Helper()
	lab.RequirePods(c.t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := &podChurn{cancel: cancel, started: map[string]*atomic.Int64{}}
	for _, n := range c.lab.Nodes {
		count := &atomic.Int64{}
		ch.started[n.Name] = count
		ch.wg.Go(func() { ch.run(ctx, n, count, interval) })
	}
	c.t.Cleanup(func() { ch.stop() })
	return ch
}

func (ch *podChurn) run(ctx context.Context, n *lab.Node, count *atomic.Int64, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var prev *lab.Pod
	defer func() {
		if prev != nil {
			ch.fail(prev.Close())
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p, err := n.StartPod("")
		if err != nil {
			ch.fail(err)
			return
		}
		count.Add(1)
		if prev != nil {
			if err := prev.Close(); err != nil {
				ch.fail(err)
				return
			}
		}
		prev = p
	}
}

func (ch *podChurn) fail(err error) {
	if err == nil {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.errs = append(ch.errs, err)
}

// waitChurning waits until every node has started two pods: the first
// pod on a node also creates its bridge, a one-time cost that a
// measurement of steady churn leaves out.
func (c *cluster) waitChurning(ch *podChurn) {
	c.t.Helper()
	c.waitFor("two pods started on every node", func() bool {
		for _, n := range c.lab.Nodes {
			if ch.count(n) < 2 {
				return false
			}
		}
		return true
	})
}

// count is how many pods node has started so far.
func (ch *podChurn) count(node *lab.Node) int64 { return ch.started[node.Name].Load() }

// total is how many pods have been started so far.
func (ch *podChurn) total() int64 {
	var n int64
	for _, c := range ch.started {
		n += c.Load()
	}
	return n
}

// stop ends the churn, closes the last pods and returns what failed.
func (ch *podChurn) stop() []error {
	ch.cancel()
	ch.wg.Wait()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.errs
}

// lossWindow is how long sweepWhile waits for an answer: longer than
// askWindow, so that a loaded test machine delaying the client or the
// speaker by a few hundred milliseconds is not taken for a lost answer.
const lossWindow = 300 * time.Millisecond

// sweepWhile asks for addr on every sweep until done says enough, and
// fails for each sweep not answered by want alone. It returns how many
// sweeps it made.
func (c *cluster) sweepWhile(addr netip.Addr, want *lab.Node, done func() bool) int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sweeps, bad := 0, 0
	for !done() {
		got, err := c.sweep(ctx, []netip.Addr{addr}, lossWindow)
		if err != nil {
			c.t.Fatalf("sweep for %s: %v", addr, err)
		}
		sweeps++
		if answers := got[addr]; len(answers) != 1 || !isMAC(answers[0], want) {
			bad++
			if bad <= 5 {
				c.t.Errorf("%s asked at sweep %d: answered by %s, want %s alone", addr, sweeps, macs(answers), want.Name)
			}
		}
	}
	if bad > 0 {
		c.t.Errorf("%s: %d of %d sweeps not answered by %s alone", addr, bad, sweeps, want.Name)
	}
	return sweeps
}

func macs(answers []l2probe.Answer) string {
	var out []string
	for _, a := range answers {
		out = append(out, a.MAC.String())
	}
	return "[" + strings.Join(out, " ") + "]"
}

// answeredOn is the interfaces a speaker's log says it answered on.
var answeredOn = regexp.MustCompile(`"msg":"answering on interface".*?"interface":"([^"]+)"`)

// fenceLines are the log messages of a node stopping everything because
// it may have been replaced.
var fenceLines = []string{"carrier back on an interface", "this node may have been replaced"}

// checkLogs fails for every fence and every interface other than
// segment a that a speaker's log reports.
func (c *cluster) checkLogs(s *lab.Speaker) {
	c.t.Helper()
	fences, others := logFindings(s)
	if fences > 0 {
		c.t.Errorf("the speaker on %s fenced itself %d times", s.Node.Name, fences)
	}
	for _, name := range others {
		c.t.Errorf("the speaker on %s answered on %s", s.Node.Name, name)
	}
}

// logFindings counts a speaker's fence log lines and lists the interfaces
// other than segment a it answered on.
func logFindings(s *lab.Speaker) (fences int, others []string) {
	out := s.Output()
	for _, line := range fenceLines {
		fences += strings.Count(out, line)
	}
	for _, m := range answeredOn.FindAllStringSubmatch(out, -1) {
		if m[1] != lab.SegmentA {
			others = append(others, m[1])
		}
	}
	return fences, others
}

// TestPodChurnDuringFailover: pods start and stop on every node (a veth
// per pod, created by the CNI bridge plugin) all through a failover: the
// owner answers every request while it starts 50 pods, the new owner
// takes over and answers every request while it starts 20 more, the old
// owner comes back with no request answered twice; no speaker fences
// itself or answers on any interface but the LAN's.
func TestPodChurnDuringFailover(t *testing.T) {
	lab.RequirePods(t)
	c := newCluster(t)
	for _, tc := range failoverCases {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			key := c.failoverService(tc)
			old := c.owner(tc.addr)
			c.waitStatus(key, old, lab.SegmentA)
			churn := c.churnPods(podInterval)

			from := churn.count(old)
			c.sweepWhile(tc.addr, old, func() bool { return churn.count(old) >= from+50 })

			killed := c.speakers[old.Name]
			killed.Kill()
			c.checkLogs(killed)
			owner := c.newOwner(tc.addr, old)
			from = churn.count(owner)
			c.sweepWhile(tc.addr, owner, func() bool { return churn.count(owner) >= from+20 })
			c.waitStatus(key, owner, lab.SegmentA)

			stopWatching := c.watchOverlap(tc.addr)
			c.start(old)
			c.waitAnswer(lab.SegmentA, tc.addr, old)
			if asked := stopWatching(); asked < 3 {
				t.Errorf("only %d requests asked during the handback", asked)
			}
			for _, err := range churn.stop() {
				t.Errorf("pods: %v", err)
			}
			for _, s := range c.speakers {
				c.checkLogs(s)
			}
			c.waitMembers()
		})
	}
}
