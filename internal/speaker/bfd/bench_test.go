package bfd_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
	"github.com/steadylb/steadylb/test/frr"
)

// BenchmarkFRRLinkCut measures failure detection against FRR's bfdd at
// 300 ms x 3: from setting the node's link down until our Manager reports
// each session (IPv4 and IPv6) Down, and until bfdd logs it down. One
// iteration is one cut, then the link is restored and both sessions come
// back Up. Root only, like the tests; run with -benchtime 10x.
//
// Our time is taken when OnStateChange is called, bfdd's from the
// millisecond timestamp of its state-change log line.
func BenchmarkFRRLinkCut(b *testing.B) {
	l := newFRRLab(b, logr.Discard(), bfd.Profile{})
	var ours, theirs []time.Duration
	for b.Loop() {
		for _, k := range l.keys {
			l.bothIn(b, k, bfd.Up, bfd.DiagNone, 15*time.Second)
		}
		// Let the Poll of coming Up finish and the packets settle into
		// their jittered rhythm, so the cut falls anywhere in a cycle.
		time.Sleep(time.Second)

		from, logged := l.events.len(), len(l.frr.BFDStateChanges(b))
		cut := time.Now()
		l.node.IP(b, "link", "set", "eth0", "down")
		waitFor(b, "both sides down", 10*time.Second, func() error {
			evs, _ := l.events.since(from)
			if n, m := countDown(evs), countFRRDown(l.frr.BFDStateChanges(b)[logged:]); n < len(l.keys) || m < len(l.keys) {
				return fmt.Errorf("%d of ours and %d of bfdd's down", n, m)
			}
			return nil
		})
		evs, at := l.events.since(from)
		for i, ev := range evs {
			if ev.Old == bfd.Up && ev.New == bfd.Down {
				if ev.Diag != bfd.DiagControlDetectionTimeExpired {
					b.Fatalf("%s went down with %s, want a detection timeout", ev.Peer, ev.Diag)
				}
				ours = append(ours, at[i].Sub(cut))
			}
		}
		for _, c := range l.frr.BFDStateChanges(b)[logged:] {
			if c.From == "up" && c.To == "down" {
				if c.Reason != "control-expired" {
					b.Fatalf("bfdd's %s went down for %s, want control-expired", c.Peer, c.Reason)
				}
				theirs = append(theirs, c.At.Sub(cut))
			}
		}
		l.node.IP(b, "link", "set", "eth0", "up")
	}
	if len(ours) == 0 || len(ours) != len(theirs) {
		b.Fatalf("%d of our detections, %d of bfdd's", len(ours), len(theirs))
	}
	report(b, "ours", ours)
	report(b, "frr", theirs)
	b.ReportMetric(float64(len(ours)), "samples")
	b.ReportMetric(0, "ns/op")
}

func countFRRDown(changes []frr.BFDStateChange) int {
	n := 0
	for _, c := range changes {
		if c.From == "up" && c.To == "down" {
			n++
		}
	}
	return n
}

func countDown(evs []bfd.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Old == bfd.Up && ev.New == bfd.Down {
			n++
		}
	}
	return n
}

func report(b *testing.B, who string, d []time.Duration) {
	b.ReportMetric(ms(median(d)), who+"-p50-ms")
	b.ReportMetric(ms(slices.Max(d)), who+"-max-ms")
}

func median(d []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(d))
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
