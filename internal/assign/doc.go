// Package assign decides which address each Service of type LoadBalancer
// gets, from a snapshot of cluster objects and without any API client.
// internal/controller decides with it from its cache and writes what it
// decides; the kubectl plugin replays it over one LIST per kind.
//
//   - request.go: a Service's request, from its spec and MetalLB annotations
//   - record.go: the allocation record annotation, the terms an address is
//     held under
//   - reservations.go, retain.go: the addresses AddressReservations keep
//     for a Service name, held in the book by a stand-in
//   - decide.go, recall.go: the Decision for one Service, made under the
//     Allocator's lock
//   - startup.go: the startup barrier's order, and the book it restores
//     from what Services show
//   - replay.go: the whole barrier read-only (Replay), every write taken as
//     accepted: for a cluster the controller has settled, what the running
//     controller holds
//   - prerestore.go: the barrier's restore made while the Services are
//     still being listed, in their listing order, for a Replay to start
//     from when no claim was refused
package assign
