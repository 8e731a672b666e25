package packets

import (
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/lab"
)

// splitTrials is how many times each split-brain benchmark disturbs the
// owner.
const splitTrials = 10

// splitFor is how long the owner stays frozen or cut off: long enough for
// the others to declare it dead and take its addresses over.
const splitFor = 2 * time.Second

// BenchmarkSplitBrain measures two nodes answering one request after the
// owner of every address was separated from the others and came back,
// either frozen (SIGSTOP for 2 s, then SIGCONT: its process, sockets and
// responders resume where they were) or cut off (its segment-a link down
// for 2 s, then up: it keeps running and sees the carrier go and come
// back). The others declare it dead and take its addresses over; when it
// returns, it must stop before it answers again. From the disturbance
// until it alone answers for every address again, the client asks for
// every address on every sweep (each from its own MAC, sweepWindow
// apart), counting each request two MACs answered. Before it returns the
// victim reaches no client, so the count starts at its return. Pods start and stop on
// every node throughout, as in BenchmarkFailover.
func BenchmarkSplitBrain(b *testing.B) {
	for _, how := range []string{"freeze", "cut"} {
		for _, bc := range []struct {
			family string
			n      int
		}{{"ipv4", 1}, {"ipv6", 1000}} {
			addrs := benchAddresses(lab.Require(b), bc.family, bc.n)
			b.Run(fmt.Sprintf("%s/%s-%d", how, bc.family, len(addrs)), func(b *testing.B) {
				for range b.N {
					benchSplit(b, how, addrs)
				}
			})
		}
	}
}

func benchSplit(b *testing.B, how string, addrs []netip.Addr) {
	c := prepareCluster(b)
	victim := c.lab.Nodes[0]
	c.advertisePreferring("split", addrs, victim)
	c.services("split", addrs)
	c.startAll()
	// On a failure, the speakers' goroutines go to their output (Go's
	// SIGQUIT dump), which the test prints: a speaker that stopped
	// answering for good shows where it waits.
	b.Cleanup(func() {
		if b.Failed() {
			for _, s := range c.running() {
				_ = syscall.Kill(s.Pid(), syscall.SIGQUIT)
				select {
				case <-s.Done:
				case <-time.After(5 * time.Second):
				}
			}
		}
	})
	c.waitAllAnsweredBy(addrs, victim)
	if lab.PodsUnavailable() == "" {
		churn := c.churnPods(benchPodInterval)
		c.waitChurning(churn)
		defer func() {
			for _, err := range churn.stop() {
				b.Errorf("pods: %v", err)
			}
		}()
	}
	var doubles, withAny int
	var longest time.Duration
	var gaps []time.Duration
	for trial := range splitTrials {
		c.waitObjectsOf(victim, len(addrs))
		o := newOverlaps(victim)
		c.separate(how, victim, addrs)
		// Until it is back: while separated it reaches no client.
		c.waitAllAnsweredBy(addrs, victim, o.observe)
		doubles += o.count
		if o.count > 0 {
			withAny++
		}
		longest = max(longest, o.longest())
		gaps = append(gaps, o.sawHandovers(b, trial, addrs)...)
		b.Logf("trial %d (%s): %d double answers, longest %v, first %s", trial, how, o.count,
			o.longest().Round(time.Millisecond), o.earliest().Format(logTime))
		c.waitMembers()
	}
	b.ReportMetric(float64(doubles), "double-answers")
	b.ReportMetric(float64(withAny), "trials-with-doubles")
	b.ReportMetric(ms(longest), "overlap-max-ms")
	reportPercentiles(b, "handover-gap", gaps)
	b.ReportMetric(float64(len(addrs)), "addresses")
	b.ReportMetric(0, "ns/op")
}

// separate freezes the victim's speaker or cuts its link for splitFor,
// after another node has taken its addresses over, then lets it back.
func (c *cluster) separate(how string, victim *lab.Node, addrs []netip.Addr) {
	c.t.Helper()
	s := c.speakers[victim.Name]
	switch how {
	case "freeze":
		if err := syscall.Kill(s.Pid(), syscall.SIGSTOP); err != nil {
			c.t.Fatal(err)
		}
	case "cut":
		if err := victim.CutLink(lab.SegmentA); err != nil {
			c.t.Fatal(err)
		}
	}
	separated := time.Now()
	// Another node answers for the first address: the others declared
	// the victim dead.
	c.newOwner(addrs[0], victim)
	time.Sleep(time.Until(separated.Add(splitFor)))
	switch how {
	case "freeze":
		if err := syscall.Kill(s.Pid(), syscall.SIGCONT); err != nil {
			c.t.Fatal(err)
		}
	case "cut":
		if err := victim.RestoreLink(lab.SegmentA); err != nil {
			c.t.Fatal(err)
		}
	}
}
