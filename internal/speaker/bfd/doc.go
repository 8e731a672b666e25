// Package bfd runs single-hop asynchronous BFD (RFC 5880, over UDP per
// RFC 5881).
package bfd
