package speaker

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
)

// work is one entry of the speaker's work queue.
type work struct {
	kind workKind
	// service is set for serviceWork.
	service types.NamespacedName
	// addr is set for addressWork.
	addr netip.Addr
}

type workKind uint8

const (
	// serviceWork revisits one Service's addresses: it or its endpoints
	// or its ServiceL2Status objects changed.
	serviceWork workKind = iota
	// addressWork revisits one address: a ServiceL2Status that guards it
	// changed.
	addressWork
	// configWork reloads the configuration, and revisits everything if it
	// changed.
	configWork
	// everythingWork revisits every address: membership or a Node changed.
	everythingWork
	// stateWork rewrites the ConfigurationState (someone deleted it).
	stateWork
	// joinWork only runs a round, so that a speaker that just started
	// notices JoinWait has passed even when nothing else happens.
	joinWork
	// interfacesWork revisits everything after the host's interfaces
	// changed, asking the Announcer again which interfaces answer, so the
	// objects and the ConfigurationState follow.
	interfacesWork
	// fenceWork stops answering everything and starts over: another
	// speaker declared this node dead, or a link came back, and others may
	// be answering its addresses. Every known address is decided again,
	// as after membersWork: what the node knows of its Services is still
	// current (their events queue their own work), and a node declared
	// dead again and again while it starts, on a starved machine, must not
	// read every Service each time.
	fenceWork
	// bgpResendWork sends the BGP routes a failed Update left pending.
	bgpResendWork
	// bgpSessionsWork follows the Router: a session went up or down, or
	// its faults changed, so the ServiceBGPStatus objects and the
	// ConfigurationState may have to change.
	bgpSessionsWork
	// membersWork revisits every address this node knows of: the live set
	// changed, which moves owners but changes no Service, EndpointSlice or
	// Node, so no Service is read again (a failover is this round, on
	// every survivor) and BGP, which does not depend on it, is left alone.
	membersWork
	// excludeWork reloads the interface exclusions (the metallb-excludel2
	// ConfigMap) and, if they changed, revisits everything as
	// interfacesWork does.
	excludeWork
)

func forService(key types.NamespacedName) work { return work{kind: serviceWork, service: key} }
func forAddress(a netip.Addr) work             { return work{kind: addressWork, addr: a} }

var (
	reloadConfig   = work{kind: configWork}
	everything     = work{kind: everythingWork}
	membersChanged = work{kind: membersWork}
	rewriteState   = work{kind: stateWork}
	joinCheck      = work{kind: joinWork}
	rescanned      = work{kind: interfacesWork}
	fenced         = work{kind: fenceWork}
	bgpResend      = work{kind: bgpResendWork}
	bgpSessions    = work{kind: bgpSessionsWork}
	// reloadExclusions is queued with reloadConfig at start, so the first
	// Announce already leaves excluded interfaces out.
	reloadExclusions = work{kind: excludeWork}
)

// maxBatch bounds one round, so that a flood of events still yields
// regular progress reports and retries.
const maxBatch = 4096

// nextBatch blocks for one entry, then takes whatever else is queued: one
// round then makes one Announce call for all of it, which is what keeps a
// failover of many addresses fast. ok is false once the queue shut down.
// Each entry must be marked Done.
func (s *Speaker) nextBatch() (batch []work, ok bool) {
	first, shutdown := s.queue.Get()
	if shutdown {
		return nil, false
	}
	batch = append(batch, first)
	for s.queue.Len() > 0 && len(batch) < maxBatch {
		w, shutdown := s.queue.Get()
		if shutdown {
			break
		}
		batch = append(batch, w)
	}
	return batch, true
}
