// Package lbclass decides whether a Service is steadylb's to serve: type
// LoadBalancer and the load-balancer class it was started with. The
// controller (to assign) and the speaker (to announce) must agree on it
// exactly, so the one rule lives here and both import it.
package lbclass
