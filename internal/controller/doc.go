// Package controller assigns addresses to Services of type LoadBalancer. It
// is a thin shell around internal/assign, which decides: it feeds the
// decisions what the cache shows, runs the startup barrier, and writes
// them back to the API server with expectations, so that an address, once
// given, stays with its Service until the user changes something about
// that Service.
//
// The flow, one way:
//
//	Service, IPAddressPool, Namespace (cache)
//	   -> assign.Allocator  Service -> ipam.Request; one ipam.Book, under a
//	                        lock, fed in a fixed order
//	   -> status.go         status.loadBalancer, the pool annotation, conditions
//
// Until the startup barrier (startup.go) has registered every existing
// assignment, nothing is allocated.
package controller
