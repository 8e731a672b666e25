// Package peerjoin finds the other speakers the way MetalLB does, by
// listing the speaker Pods (--ml-labels) in the speaker's namespace, and
// joins the membership to the IPs of those whose node is not a live member.
// Gossip spreads the rest; joining makes a fresh speaker find the others at
// once, and joining again every few seconds makes the two sides of a healed
// partition find each other before memberlist's own push/pull would.
//
// It is an input of the speaker: it only ever adds members, and decides
// nothing about addresses.
package peerjoin
