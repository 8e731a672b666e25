package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadylb/steadylb/internal/speaker"
)

// The network side of the speaker is built here, behind the two
// interfaces internal/speaker consumes. This build carries stand-ins: a
// dry-run announcer and a membership of this node alone, enough to run one
// node and to test the wiring. internal/speaker/layer2 and
// internal/speaker/membership replace them in these two functions.

// newAnnouncer returns the ARP/NDP responder. If it is also a
// manager.Runnable, main runs it with the manager.
func newAnnouncer(log logr.Logger, f flags, _ prometheus.Registerer) (speaker.Announcer, error) {
	log.Info("this build has no ARP/NDP responder: addresses are decided and recorded, not answered",
		"announceInterval", f.announceInterval)
	return &dryRunAnnouncer{log: log}, nil
}

// newMembership returns the speaker membership and the function that
// leaves it on shutdown.
func newMembership(log logr.Logger, f flags, _ []byte, _ prometheus.Registerer) (speaker.Membership, func(), error) {
	if f.mlBindPort != 0 {
		return nil, nil, errors.New("this build has no gossip membership: run a single node with --ml-bindport=0")
	}
	log.Info("running without a membership: this node is the only live speaker")
	return &loneMember{node: f.nodeName}, func() {}, nil
}

// loneMember is a membership of this node alone: with --ml-bindport=0
// there is no one else to hear from.
type loneMember struct{ node string }

var _ speaker.Membership = (*loneMember)(nil)

func (m *loneMember) Join([]string) (int, error) { return 0, nil }
func (m *loneMember) Live() []string             { return []string{m.node} }
func (m *loneMember) Changed() <-chan struct{}   { return nil }

// dryRunAnnouncer works out which of this host's interfaces would answer
// for each address, and answers nothing on the network.
type dryRunAnnouncer struct {
	log logr.Logger
	mu  sync.Mutex
}

var _ speaker.Announcer = (*dryRunAnnouncer)(nil)

func (d *dryRunAnnouncer) Announce(_ context.Context, want map[netip.Addr][]string) (map[netip.Addr][]string, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ifaces, err := net.Interfaces()
	if err != nil {
		d.log.Error(err, "list interfaces")
	}
	var suitable, present []string
	for _, i := range ifaces {
		present = append(present, i.Name)
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagBroadcast != 0 && i.Flags&net.FlagLoopback == 0 {
			suitable = append(suitable, i.Name)
		}
	}
	answering := make(map[netip.Addr][]string, len(want))
	var missing []string
	for addr, names := range want {
		if len(names) == 0 {
			answering[addr] = slices.Clone(suitable)
			continue
		}
		for _, n := range names {
			if slices.Contains(present, n) {
				answering[addr] = append(answering[addr], n)
			} else {
				missing = append(missing, n)
			}
		}
	}
	slices.Sort(missing)
	d.log.Info("would answer", "addresses", len(want), "missingInterfaces", slices.Compact(missing))
	return answering, slices.Compact(missing)
}
