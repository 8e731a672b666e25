// Package bgppasswords reads the Secrets that BGPPeers name in
// passwordSecret, one GET each, and decides when to read each again. It is
// an input of the speaker's configuration: what it returns goes into the
// configuration snapshot, and its fingerprint tells the speaker that a
// password changed.
package bgppasswords
