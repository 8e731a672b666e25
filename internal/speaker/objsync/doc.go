// Package objsync writes this node's per-Service status objects in the
// background: L2 its ServiceL2Status objects (internal/speaker/l2status),
// and the departed nodes' ones it must delete; BGP its ServiceBGPStatus
// objects (internal/speaker/bgpstatus). A round only says what each
// object should list (Want); it never waits for the API server, so a
// failover answers for every address it takes over at once, however
// many Services move, and their objects follow at the API server's pace.
//
// The two share their shape: the latest wish per Service (wishes), a
// rate-limited queue of the Services whose wish changed, workers that
// write each from the latest wish when its turn comes (so a burst of
// changes to one Service costs at most one write per kind, and a write
// no longer wanted is never made), failed writes retried with backoff,
// and an object deleted by someone else while still wanted written
// again. L2 also deletes the objects of nodes that left.
package objsync
