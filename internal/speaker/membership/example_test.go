package membership_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadylb/steadylb/internal/speaker/membership"
)

// A speaker's use of the membership: start it with the MetalLB Secret's
// key, join the other speakers, follow the live set, leave on shutdown.
// (Compiled, not run: it binds the real memberlist port.)
func Example() {
	ctx, stop := context.WithTimeout(context.Background(), time.Minute) // the process's signal context
	defer stop()
	log := logr.Discard()

	key, err := membership.ReadSecretKey("/etc/ml_secret_key") // mounted Secret "memberlist"
	if err != nil {
		panic(err)
	}
	m, err := membership.New(log, membership.Options{
		NodeName:   "worker-1",
		BindAddr:   "198.51.100.11", // the node's address (status.hostIP)
		SecretKey:  key,
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		panic(err)
	}
	defer m.Leave(time.Second) // peers drop this node at once

	// The peers: the speaker Pods' IPs, listed by label.
	if _, err := m.Join([]string{"198.51.100.12", "198.51.100.13"}); err != nil {
		log.Error(err, "no peer reached yet; retried when the speaker Pods change")
	}
	for {
		select {
		case <-m.Changed():
			fmt.Println("live speakers:", m.Live()) // re-elect owners from this set
		case <-ctx.Done():
			return
		}
	}
}
