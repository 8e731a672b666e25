// Package config turns a snapshot of steadylb's configuration objects
// (IPAddressPools, L2Advertisements, BGPAdvertisements, BGPPeers, BFDProfiles,
// Communities and the Secrets that hold BGP passwords) into one validated,
// immutable model that the controller and the speaker read.
//
// It is a pure function: Build takes a Snapshot and returns a *Config and an
// ErrorList. It reads no cluster state, keeps no state between calls, and the
// same Snapshot always gives the same Config and the same errors in the same
// order, whatever order the objects arrive in.
//
// The rules are MetalLB's, checked here again even where the
// CRD schema or its CEL rules already enforce them, because objects can reach
// the cluster around the schema (older CRDs, direct etcd writes, tests).
package config
