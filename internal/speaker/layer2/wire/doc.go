// Package wire builds and parses the link-layer frames that ARP and IPv6
// neighbor discovery travel in, and opens the packet sockets that carry
// them. It is shared by the layer-2 responders and by the test probe, so
// both speak exactly the same bytes.
//
// The message bodies are mdlayher's (arp.Packet, ndp.Message); this package
// adds what those leave to a socket: the Ethernet and IPv6 headers, the
// ICMPv6 checksum check on receive, the validity rules of RFC 4861 §7.1 that
// a kernel would apply (hop limit 255, code 0), and classic BPF programs so
// the kernel hands user space only the frames it asked for.
//
// Every parser treats its input as untrusted: any byte string gives either a
// value or an error, never a panic (see the fuzz tests).
package wire
