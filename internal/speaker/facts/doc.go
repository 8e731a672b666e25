// Package facts reduces a Node, a Service and its EndpointSlices to what
// the speaker's decisions read: whether a node may announce at all, whether
// a Service has a serving endpoint, and on which nodes. Nothing here is
// specific to layer 2 or BGP: both ask the same questions. It is pure: no
// client, no clock.
package facts
