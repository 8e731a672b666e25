package packets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/lab"
)

// failoverTrials is how many times each failover benchmark kills the
// owner.
const failoverTrials = 20

// sweepWindow is how long a sweep waits for answers after its last
// request: the resolution of the measured times.
const sweepWindow = 10 * time.Millisecond

const preferredLabel = "lab.steadylb.io/preferred"

// BenchmarkFailover kills the speaker that announces the addresses with
// SIGKILL, at default settings, and measures until the client's ARP or
// NDP requests for every one of them are answered by another node's MAC
// (the client asks for every address still pending every sweepWindow or
// so). Each trial starts from a settled cluster (waitSettled); one slower
// than slowFailover logs the client's sweeps. The announcing node is made
// the owner of all the addresses by a preferredNodeSelectors weight, so
// that every address moves. Each trial then restarts it and measures the
// handback: the addresses return to it (ownership is computed), and every
// address is asked on every sweep until all have, counting each request
// two MACs answered (target: none).
// Every address must be seen without the restarted node's answer and then
// with it (else 0 doubles would mean nothing); handover-gap is the time
// from the end of the last sweep without it to its first answer.
//
// With STEADYLB_PROFILE_DIR set, it also writes a CPU profile of the
// surviving speakers' first failoverProfile of trials there
// (survivor-N.pprof).
func BenchmarkFailover(b *testing.B) {
	for _, bc := range []struct {
		family string
		n      int
	}{{"ipv4", 1}, {"ipv6", 1}, {"ipv4", -1}, {"ipv6", 1000}} {
		addrs := benchAddresses(lab.Require(b), bc.family, bc.n)
		b.Run(fmt.Sprintf("%s-%d", bc.family, len(addrs)), func(b *testing.B) {
			for range b.N {
				benchFailover(b, addrs)
			}
		})
	}
}

func benchFailover(b *testing.B, addrs []netip.Addr) {
	// With a memberlist key, as the shipped install runs (its controller
	// writes one): gossip encrypted, declared-dead messages sealed.
	dir, extra := profiling()
	c := prepareCluster(b, append(memberlistKey(b), extra...)...)
	victim := c.lab.Nodes[0]
	c.advertisePreferring("bench", addrs, victim)
	c.services("bench", addrs)
	c.startAll()
	c.waitAllAnsweredBy(addrs, victim)
	defer c.profileSurvivors(dir, failoverProfile)()
	// Pods start and stop on every node all through the trials, as on a
	// real cluster.
	var churn *podChurn
	if lab.PodsUnavailable() == "" {
		churn = c.churnPods(benchPodInterval)
		c.waitChurning(churn)
	}
	var fences int
	late := &lateAnswers{victim: victim}
	c.probe[lab.SegmentA].OnLate = late.add
	defer func() { c.probe[lab.SegmentA].OnLate = nil }()

	var failover []time.Duration
	var doubles int
	var overlap time.Duration
	var gaps []time.Duration
	for trial := range failoverTrials {
		c.waitObjectsOf(victim, len(addrs))
		health := c.waitSettled()
		late.reset()
		killed := time.Now()
		dead := c.speakers[victim.Name]
		dead.Kill()
		f, others := logFindings(dead)
		fences += f
		if len(others) > 0 {
			b.Errorf("the speaker on %s answered on %v", victim.Name, others)
		}
		var sweeps sweepLog
		moved := c.sweepUntil(addrs, func(answers []l2probe.Answer) (time.Time, bool) {
			for _, a := range answers {
				if !isMAC(a, victim) {
					return a.At, true
				}
			}
			return time.Time{}, false
		}, nil, sweeps.add)
		failover = append(failover, latest(moved).Sub(killed))
		if failover[trial] > slowFailover {
			b.Logf("trial %d: slow failover, killed at %s, health scores before settling %v; the client's sweeps: %s; %s",
				trial, killed.Format(logTime), health, sweeps.since(killed), late.report(moved, killed))
		}

		restarted := time.Now()
		c.start(victim)
		o := newOverlaps(victim)
		c.waitAllAnsweredBy(addrs, victim, o.observe)
		doubles += o.count
		overlap = max(overlap, o.longest())
		gaps = append(gaps, o.sawHandovers(b, trial, addrs)...)
		b.Logf("trial %d: failover %v; handback from %s: %d double answers, longest %v, first %s",
			trial, failover[trial].Round(time.Millisecond), restarted.Format(logTime), o.count,
			o.longest().Round(time.Millisecond), o.earliest().Format(logTime))
		c.waitMembers()
	}
	if len(failover) != failoverTrials {
		b.Fatalf("measured %d failovers, want %d", len(failover), failoverTrials)
	}
	for _, s := range c.speakers {
		f, others := logFindings(s)
		fences += f
		if len(others) > 0 {
			b.Errorf("the speaker on %s answered on %v", s.Node.Name, others)
		}
	}
	if churn != nil {
		b.ReportMetric(float64(churn.total()), "pods-started")
		for _, err := range churn.stop() {
			b.Errorf("pods: %v", err)
		}
	}
	b.ReportMetric(float64(fences), "fences")
	reportPercentiles(b, "failover", failover)
	b.ReportMetric(float64(doubles), "double-answers")
	b.ReportMetric(ms(overlap), "overlap-max-ms")
	reportPercentiles(b, "handover-gap", gaps)
	b.ReportMetric(float64(len(addrs)), "addresses")
	b.ReportMetric(0, "ns/op")
}

// memberlistKey writes a memberlist Secret's key as the kubelet mounts
// it (a directory with the file "secretkey") and returns the speaker flag
// that reads it.
func memberlistKey(tb testing.TB) []string {
	tb.Helper()
	dir := tb.TempDir()
	key := make([]byte, 96)
	if _, err := rand.Read(key); err != nil {
		tb.Fatal(err)
	}
	secret := base64.StdEncoding.EncodeToString(key)
	if err := os.WriteFile(filepath.Join(dir, "secretkey"), []byte(secret), 0o600); err != nil {
		tb.Fatal(err)
	}
	return []string{"--ml-secret-key-path", dir}
}

// advertisePreferring advertises a pool of addrs from every node,
// preferring node: it owns every address while it is a candidate.
func (c *cluster) advertisePreferring(name string, addrs []netip.Addr, node *lab.Node) {
	c.t.Helper()
	c.label(node, preferredLabel, "yes")
	var ranges []string
	for _, a := range addrs {
		ranges = append(ranges, netip.PrefixFrom(a, a.BitLen()).String())
	}
	c.advertise(name, ranges, func(s *v1beta1.L2AdvertisementSpec) {
		s.PreferredNodeSelectors = []v1beta1.PreferredNodeSelector{{Weight: 100,
			Preference: metav1.LabelSelector{MatchLabels: map[string]string{preferredLabel: "yes"}}}}
	})
}

// waitSettled waits until every running speaker is past its start grace
// and sees every other one live with a Lifeguard health score of 0, and
// returns the health scores it saw before that. A failover is measured
// from a settled cluster: right after the start, a survivor may still be
// in its own start grace (it takes nothing over until the grace ends),
// and memberlist, after the misses of a start under load, probes up to 8
// times more slowly until its probes succeed again.
func (c *cluster) waitSettled() (before map[string]float64) {
	c.t.Helper()
	if c.lab.MetalLB() {
		return nil
	}
	want := float64(len(c.running()))
	c.waitWithin("every speaker past its grace, with a health score of 0", 2*time.Minute, 20*time.Millisecond, func() bool {
		settled := true
		scores := map[string]float64{}
		for _, s := range c.running() {
			m, err := s.Metrics(context.Background())
			if err != nil {
				return false
			}
			scores[s.Node.Name], _ = m.Value("steadylb_memberlist_health_score")
			grace, _ := m.Value("steadylb_speaker_start_grace")
			live, _ := m.Value("steadylb_memberlist_members", "state", "alive")
			settled = settled && scores[s.Node.Name] == 0 && grace == 0 && live == want
		}
		if before == nil {
			before = scores
		}
		return settled
	})
	return before
}

// waitObjectsOf waits until node's ServiceL2Status objects, n of them,
// are the only ones: the owner's background writes and the deletion of
// the other nodes' objects are done, so each trial starts from a settled
// cluster rather than in the write storm of the setup or the previous
// handback.
func (c *cluster) waitObjectsOf(node *lab.Node, n int) {
	c.t.Helper()
	// Minutes, not one: a thousand writes on a loaded machine.
	c.waitWithin(fmt.Sprintf("%d ServiceL2Status objects, all %s's", n, node.Name), 5*time.Minute, 20*time.Millisecond, func() bool {
		var list v1beta1.ServiceL2StatusList
		if err := kube().List(context.Background(), &list, client.InNamespace(c.lab.Namespace())); err != nil {
			// A loaded API server drops a stream now and then: ask again.
			c.t.Logf("list ServiceL2Status: %v", err)
			return false
		}
		for _, st := range list.Items {
			if st.Status.Node != node.Name {
				return false
			}
		}
		return len(list.Items) == n
	})
}

func isMAC(a l2probe.Answer, n *lab.Node) bool { return slices.Equal(a.MAC, n.MAC(lab.SegmentA)) }

// lateAnswers keeps, for one trial, each address's first answer from a
// node other than the victim that came after its sweep's window (to an
// earlier sweep's hardware address): the client counts an answer only
// within the window, a real client would take it whenever it comes.
type lateAnswers struct {
	victim *lab.Node
	mu     sync.Mutex
	first  map[netip.Addr]time.Time
}

func (l *lateAnswers) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.first = map[netip.Addr]time.Time{}
}

func (l *lateAnswers) add(addr netip.Addr, a l2probe.Answer) {
	if isMAC(a, l.victim) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.first[addr]; l.first != nil && (!ok || a.At.Before(t)) {
		l.first[addr] = a.At
	}
}

// report says how many addresses had a late answer before the one the
// client counted, and when the last address was first answered counting
// the late answers too, in ms after killed.
func (l *lateAnswers) report(counted map[netip.Addr]time.Time, killed time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var earlier int
	var last time.Time
	for addr, t := range counted {
		if lt, ok := l.first[addr]; ok && lt.Before(t) {
			earlier++
			t = lt
		}
		if t.After(last) {
			last = t
		}
	}
	return fmt.Sprintf("%d addresses answered late before an answer counted; counting late answers, the last first answered at +%d ms",
		earlier, last.Sub(killed).Milliseconds())
}

// slowFailover is the failover time above which a trial logs the
// client's sweeps, to tell a late answer from a late question.
const slowFailover = 700 * time.Millisecond

// sweepLog records the client's sweeps of one wait: when each began and
// ended and how many addresses were still pending after it.
type sweepLog []sweepRecord

type sweepRecord struct {
	start, end  time.Time
	asked, left int
}

func (l *sweepLog) add(r sweepRecord) { *l = append(*l, r) }

// since formats the sweeps as "+start..+end asked->left" in milliseconds
// from t, one per sweep; a run of sweeps with the same counts is folded
// into its first and last.
func (l sweepLog) since(t time.Time) string {
	var out []string
	for i, r := range l {
		if i > 0 && i < len(l)-1 && r.asked == l[i-1].asked && r.left == l[i-1].left &&
			r.asked == l[i+1].asked && r.left == l[i+1].left {
			if !strings.HasSuffix(out[len(out)-1], "...") {
				out = append(out, "...")
			}
			continue
		}
		out = append(out, fmt.Sprintf("+%d..+%d %d->%d", r.start.Sub(t).Milliseconds(),
			r.end.Sub(t).Milliseconds(), r.asked, r.left))
	}
	return strings.Join(out, ", ")
}

// sweepUntil asks for every address still pending, sweep after sweep,
// until accept has taken an answer for each, and returns the times accept
// gave. observe, when set, sees every address's answers of every sweep;
// record, when set, each sweep's times and counts.
func (c *cluster) sweepUntil(addrs []netip.Addr, accept func([]l2probe.Answer) (time.Time, bool),
	observe func(netip.Addr, []l2probe.Answer), record func(sweepRecord)) map[netip.Addr]time.Time {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pending := slices.Clone(addrs)
	done := map[netip.Addr]time.Time{}
	for len(pending) > 0 {
		r := sweepRecord{start: time.Now(), asked: len(pending)}
		got, err := c.sweep(ctx, pending, sweepWindow)
		if err != nil {
			c.t.Fatalf("sweep with %d of %d addresses pending: %v", len(pending), len(addrs), err)
		}
		r.end = time.Now()
		pending = slices.DeleteFunc(pending, func(a netip.Addr) bool {
			if observe != nil {
				observe(a, got[a])
			}
			if at, ok := accept(got[a]); ok {
				done[a] = at
				return true
			}
			return false
		})
		r.left = len(pending)
		if record != nil {
			record(r)
		}
	}
	return done
}

// waitAllAnsweredBy sweeps every address until node alone answers for
// all of them on two sweeps in a row; observe sees every sweep.
func (c *cluster) waitAllAnsweredBy(addrs []netip.Addr, node *lab.Node, observe ...func(netip.Addr, []l2probe.Answer)) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	streak := 0
	for streak < 2 {
		got, err := c.sweep(ctx, addrs, sweepWindow)
		if err != nil {
			c.t.Fatalf("sweep, waiting for %s to answer for all %d addresses: %v", node.Name, len(addrs), err)
		}
		all := true
		for _, a := range addrs {
			for _, o := range observe {
				o(a, got[a])
			}
			if len(got[a]) != 1 || !isMAC(got[a][0], node) {
				all = false
			}
		}
		if all {
			streak++
		} else {
			streak = 0
		}
	}
}

// overlaps watches a handback, sweep by sweep: every request two nodes
// answered, and for each address when a sweep last found the victim not
// answering it and when the victim first did. The others stop before the
// victim starts (its start grace), so between the two nobody may answer;
// what counts is that the sweeps watched each address from before the
// victim's first answer on (sawHandovers), since only from then could two
// nodes answer at once.
type overlaps struct {
	victim      *lab.Node
	count       int
	first, last map[netip.Addr]time.Time
	// without is when a sweep last found the address not answered by the
	// victim, before victimFirst.
	without, victimFirst map[netip.Addr]time.Time
}

func newOverlaps(victim *lab.Node) *overlaps {
	return &overlaps{victim: victim, first: map[netip.Addr]time.Time{}, last: map[netip.Addr]time.Time{},
		without: map[netip.Addr]time.Time{}, victimFirst: map[netip.Addr]time.Time{}}
}

func (o *overlaps) observe(a netip.Addr, answers []l2probe.Answer) {
	if _, back := o.victimFirst[a]; !back {
		i := slices.IndexFunc(answers, func(ans l2probe.Answer) bool { return isMAC(ans, o.victim) })
		if i < 0 {
			// The sweep has ended: its request for a went out before now.
			o.without[a] = time.Now()
		} else {
			o.victimFirst[a] = answers[i].At
		}
	}
	if len(answers) < 2 {
		return
	}
	o.count++
	if _, ok := o.first[a]; !ok {
		o.first[a] = answers[0].At
	}
	o.last[a] = answers[1].At
}

// handovers returns, for each of addrs seen without the victim's answer
// and then with it, the time between the end of the last sweep without it
// and its first answer, and how many addresses were not seen both ways.
func (o *overlaps) handovers(addrs []netip.Addr) (gaps []time.Duration, unseen int) {
	for _, a := range addrs {
		without, ok1 := o.without[a]
		back, ok2 := o.victimFirst[a]
		if !ok1 || !ok2 {
			unseen++
			continue
		}
		gaps = append(gaps, max(back.Sub(without), 0))
	}
	return gaps, unseen
}

// sawHandovers fails the benchmark unless every address was seen without
// the victim's answer and then with it in this trial: a count of 0 double
// answers means something only if the sweeps watched the change. It
// returns the gaps between the two.
func (o *overlaps) sawHandovers(b *testing.B, trial int, addrs []netip.Addr) []time.Duration {
	b.Helper()
	gaps, unseen := o.handovers(addrs)
	if unseen > 0 {
		b.Errorf("trial %d: %d of %d addresses were not seen unanswered by %s and then answered by it",
			trial, unseen, len(addrs), o.victim.Name)
	}
	return gaps
}

// longest is the longest time between the first and the last doubly
// answered request of one address: how long two nodes answered at once,
// as far as the sweeps could see.
func (o *overlaps) longest() time.Duration {
	var d time.Duration
	for a, first := range o.first {
		d = max(d, o.last[a].Sub(first))
	}
	return d
}

// earliest is the first doubly answered request's time; zero when none.
func (o *overlaps) earliest() time.Time {
	var t time.Time
	for _, at := range o.first {
		if t.IsZero() || at.Before(t) {
			t = at
		}
	}
	return t
}

// logTime is the speakers' log timestamp format, so that a trial's log
// line can be matched to their logs (STEADYLB_KEEP_OUTPUT).
const logTime = "15:04:05.000"

func latest(times map[netip.Addr]time.Time) time.Time {
	var t time.Time
	for _, at := range times {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// reportPercentiles reports p50, p99 and max of ds in milliseconds.
func reportPercentiles(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return // the caller has said why
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	at := func(p float64) time.Duration {
		return sorted[int(math.Ceil(p*float64(len(sorted))))-1]
	}
	b.ReportMetric(ms(at(0.50)), name+"-p50-ms")
	b.ReportMetric(ms(at(0.99)), name+"-p99-ms")
	b.ReportMetric(ms(sorted[len(sorted)-1]), name+"-max-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkFootprint measures the speakers with 1,000 announced addresses
// (1,000 IPv6 Services, all owned by one node): CPU time from the start
// of the processes until the client hears the owner answer for every
// address, CPU time per second while the client asks for all 1,000 once a
// second, and peak RSS (VmHWM), for the owner and for the other speakers
// (the same caches, nothing announced).
//
// With STEADYLB_PROFILE_DIR set, it also writes a CPU profile of each
// speaker's first 30 seconds there (owner.pprof, other-N.pprof).
func BenchmarkFootprint(b *testing.B) {
	dir, extra := profiling()
	for range b.N {
		c := prepareCluster(b, extra...)
		owner := c.lab.Nodes[0]
		addrs := benchAddresses(c.lab, "ipv6", 1000)
		c.advertisePreferring("footprint", addrs, owner)
		c.services("footprint", addrs)
		profiled := c.profile(dir, 30*time.Second)
		c.startAll()
		defer profiled()
		c.waitAllAnsweredBy(addrs, owner)
		settled := c.usage()

		const seconds = 10
		tick := time.NewTicker(time.Second)
		start := time.Now()
		for range seconds {
			c.waitAllAnsweredBy(addrs, owner)
			<-tick.C
		}
		tick.Stop()
		elapsed := time.Since(start).Seconds()
		loaded := c.usage()

		var otherCPU time.Duration
		var otherRSS int64
		for _, n := range c.lab.Nodes[1:] {
			otherCPU = max(otherCPU, settled[n.Name].CPU)
			otherRSS = max(otherRSS, loaded[n.Name].PeakRSS)
		}
		b.ReportMetric(settled[owner.Name].CPU.Seconds(), "owner-cpu-s-to-settle")
		b.ReportMetric(ms(loaded[owner.Name].CPU-settled[owner.Name].CPU)/elapsed, "owner-cpu-ms/s-answering")
		b.ReportMetric(float64(loaded[owner.Name].PeakRSS)/(1<<20), "owner-peak-rss-MiB")
		b.ReportMetric(otherCPU.Seconds(), "other-cpu-s-to-settle")
		b.ReportMetric(float64(otherRSS)/(1<<20), "other-peak-rss-MiB")
		b.ReportMetric(float64(len(addrs)), "addresses")
		b.ReportMetric(0, "ns/op")
		if loaded[owner.Name].PeakRSS == 0 || settled[owner.Name].CPU == 0 {
			b.Fatalf("measured nothing: %+v", loaded[owner.Name])
		}
	}
}

const pprofPort = "6060"

// profiling is where the benchmarks save the speakers' profiles
// (STEADYLB_PROFILE_DIR; empty: none) and the speaker flags that serve
// them (none without a directory).
func profiling() (dir string, extra []string) {
	dir = os.Getenv("STEADYLB_PROFILE_DIR")
	if dir == "" {
		return "", nil
	}
	return dir, []string{"--pprof-bind-address", ":" + pprofPort}
}

// profile fetches a CPU profile of every speaker's first d into dir, in
// the background, as owner.pprof (the first node's) and other-N.pprof;
// the returned function waits for them. Nothing when dir is empty.
func (c *cluster) profile(dir string, d time.Duration) (wait func()) {
	files := map[*lab.Node]string{}
	for i, n := range c.lab.Nodes {
		files[n] = fmt.Sprintf("other-%d.pprof", i)
		if i == 0 {
			files[n] = "owner.pprof"
		}
	}
	return c.profileInto(dir, d, files)
}

// failoverProfile is how much of the failover trials the survivors'
// CPU profiles cover (STEADYLB_PROFILE_DIR).
const failoverProfile = 90 * time.Second

// profileSurvivors is profile for every speaker but the first node's (the
// one the failover benchmarks kill), as survivor-N.pprof.
func (c *cluster) profileSurvivors(dir string, d time.Duration) (wait func()) {
	files := map[*lab.Node]string{}
	for i, n := range c.lab.Nodes[1:] {
		files[n] = fmt.Sprintf("survivor-%d.pprof", i+1)
	}
	return c.profileInto(dir, d, files)
}

// profileInto fetches a CPU profile of the next d of each node's speaker
// into dir under the file name given, in the background, asking until its
// process listens; the returned function waits for them. Nothing when dir
// is empty.
func (c *cluster) profileInto(dir string, d time.Duration, files map[*lab.Node]string) (wait func()) {
	if dir == "" {
		return func() {}
	}
	hc := *c.lab.Client.HTTP()
	hc.Timeout = d + 10*time.Second
	var wg sync.WaitGroup
	for n, name := range files {
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", net.JoinHostPort(n.IPv4.String(), pprofPort), int(d.Seconds()))
		wg.Go(func() {
			deadline := time.Now().Add(time.Minute)
			for {
				err := fetchTo(&hc, url, filepath.Join(dir, name))
				if err == nil {
					return
				}
				if time.Now().After(deadline) {
					c.t.Error(err)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	return wg.Wait
}

// heapProfiles saves each speaker's heap profile in dir (nothing when
// dir is empty), as heap-<tag>-<node>.pprof.
func (c *cluster) heapProfiles(dir, tag string) {
	if dir == "" {
		return
	}
	hc := c.lab.Client.HTTP()
	for _, n := range c.lab.Nodes {
		url := fmt.Sprintf("http://%s/debug/pprof/heap", net.JoinHostPort(n.IPv4.String(), pprofPort))
		if err := fetchTo(hc, url, filepath.Join(dir, fmt.Sprintf("heap-%s-%s.pprof", tag, n.Name))); err != nil {
			c.t.Error(err)
		}
	}
}

// fetchTo saves what url returns; hc must be the lab client's, as the
// speakers' addresses exist only inside the lab.
func fetchTo(hc *http.Client, url, path string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: status %s: %v", url, resp.Status, err)
	}
	return os.WriteFile(path, body, 0o644)
}

// usage reads every speaker's CPU time and peak RSS.
func (c *cluster) usage() map[string]lab.Usage {
	c.t.Helper()
	out := map[string]lab.Usage{}
	for name, s := range c.speakers {
		u, err := s.Usage()
		if err != nil {
			c.t.Fatal(err)
		}
		out[name] = u
	}
	return out
}
