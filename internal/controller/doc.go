// Package controller assigns addresses to Services of type LoadBalancer. It
// is a thin shell around internal/ipam: it turns Services and pools into
// requests, runs the startup barrier, and writes decisions back to the API
// server with expectations, so that an address, once given, stays with its
// Service until the user changes something about that Service.
//
// The flow, one way:
//
//	Service, IPAddressPool, Namespace (cache)
//	   -> request.go   Service -> ipam.Request, or an InvalidRequest error
//	   -> allocator.go one ipam.Book, guarded by a mutex, fed in a fixed order
//	   -> status.go    status.loadBalancer, the pool annotation, conditions
//
// Until the startup barrier (startup.go) has registered every existing
// assignment, nothing is allocated.
package controller
