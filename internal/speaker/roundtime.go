package speaker

import (
	"time"

	"github.com/go-logr/logr"
)

// slowRound is how long a round may take before the speaker logs where the
// time went. A failover is one round on each survivor; a round this slow
// is a visible part of the time an address goes unanswered.
const slowRound = 250 * time.Millisecond

// roundClock notes how long each step of a round took, for the log line of
// a slow round.
type roundClock struct {
	start, last time.Time
	steps       []any // name, duration pairs, for the log line
}

func startRoundClock() roundClock {
	now := time.Now()
	return roundClock{start: now, last: now}
}

// step ends the step called name.
func (c *roundClock) step(name string) {
	now := time.Now()
	c.steps = append(c.steps, name, now.Sub(c.last).Round(time.Millisecond).String())
	c.last = now
}

// report logs the steps when the whole round took slowRound or longer.
func (c *roundClock) report(log logr.Logger, work, decided int) {
	took := time.Since(c.start)
	if took < slowRound {
		return
	}
	kv := append([]any{"took", took.Round(time.Millisecond).String(), "work", work, "decided", decided}, c.steps...)
	log.Info("slow round", kv...)
}
