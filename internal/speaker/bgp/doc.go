// Package bgp runs this node's BGP sessions in process and advertises the
// routes the speaker decides on them. Router is the boundary: the
// speaker's core speaks only in Sessions and Routes; the library that
// implements BGP stays behind it.
package bgp
