// Package ipam is the address book: it decides which load-balancer
// addresses each Service holds. It is pure Go (net/netip, no Kubernetes
// types, no metrics, no logging); the controller converts API objects
// into Pool and Request values, calls the Book, and writes the results.
//
// # Use
//
//	book, err := ipam.New(pools)        // validated pool set
//	conflicts := book.Restore(claims)   // startup: register status, allocate nothing
//	conflicts = book.RestoreSorted(n, seq) // the same for claims made oldest first, one at a time
//	a, err := book.Allocate(req)        // idempotent; make before break
//	book.Release(svc)                   // once the API server no longer shows it
//	report, err := book.Reconfigure(newPools, eligible)
//
// Decisions are deterministic: the same calls in the same order give the
// same answers (priority, then pool name, then range order, then lowest
// address), and one Restore call gives the same result whatever order its
// claims come in. No map is iterated on a decision path.
//
// # Data structure
//
// Each pool range keeps the set of its FREE addresses as disjoint spans in
// a B-tree, in "usable index" space: an address's integer value, or, with
// avoidBuggyIPs, a dense numbering that leaves out every IPv4 .0 and .255
// (index = (v>>8)*254 + (v&0xff) - 1, O(1) both ways). A fresh range is
// one span; taking an address splits one span, releasing merges with
// neighbours. The lowest free address is the tree's minimum, so the cost
// of an allocation depends on the number of holes, logarithmically, and
// never on the size of the range (IPv6 ranges up to /0 use 128-bit
// indexes).
//
//	Book
//	├── ps: poolSet (immutable, swapped by Reconfigure)
//	│   ├── index: ranges sorted by first address ── address → range, O(log R)
//	│   └── pool "gold"  free/total counters per family
//	│       ├── range 0 (spec order)  free spans: [ .1-.4 ] [ .9-.254 ] ...
//	│       ├── range 1                free spans: [ 2001:db8::-2001:db8::ffff ]
//	│       └── shared: sharing key → B-tree of held addresses (family, range, addr)
//	├── addrs: held address → {range, sharing key, holders (sorted)}
//	└── svcs:  Service → {request, addresses, pool}
//
// Counters per pool and family change with every take and release and are
// never recounted; an exhausted family fails on its counter. The sharing
// index finds the lowest address a Service may share without scanning the
// pool.
package ipam
