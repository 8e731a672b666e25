// Package inspect computes the answers of the kubectl-steadylb plugin:
// pools, addresses, explain and migrate. It reads a cluster with one LIST
// per kind (load.go), replays the controller's startup barrier over it
// read-only (assign.Replay: the same config model, address book and
// decisions the controller runs), and turns the outcome into views that
// the command prints. It never writes to the cluster.
package inspect
