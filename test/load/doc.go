// Package load measures what a user of a LoadBalancer Service feels: it
// sends HTTP requests to one URL at a steady rate, each on a new
// connection and with a short timeout, and reports how many failed and the
// longest time without a successful answer.
//
// Every request opens its own TCP connection, so each one finds its way
// afresh (ARP or the router's routes, the node's kube-proxy rules, a
// backend); a kept-alive connection would measure the connection, not the
// Service. The backends are test/backend, whose answer names the Pod, the
// node and the source address the request arrived from.
//
// Generate is the sender. The lab runs it in the client's network
// namespace as its own process (test/loadgen), so that every socket it
// opens lives there and the test binary's own scheduling cannot delay it;
// Start drives that process and reads its results as they come.
// Summarize turns results into a Report.
package load
