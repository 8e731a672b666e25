// Package bgp tests the BGP Router (internal/speaker/bgp) against a real
// router: FRR's bgpd, bfdd and zebra in one network namespace, the
// Router in another, run as its own process (test/bgprouter) because a
// Go process cannot move all its threads into a namespace, and because
// graceful restart needs a process to kill. Everything is asserted from
// FRR's own JSON views.
//
// The tests need root, iproute2 and Debian's frr package, and skip with a
// clear message elsewhere. The link-cut benchmarks run with
// "make bench-bgp-link".
package bgp
