package layer2

import (
	"net"
	"net/netip"
)

// codec is what differs between the ARP and the NDP responder: which frames
// are questions, and the bytes of the answers.
type codec interface {
	// question decodes frame; ok is false unless it asks which MAC holds
	// an address.
	question(frame []byte) (q question, ok bool)
	// answer is the reply to q, from mac.
	answer(mac net.HardwareAddr, q question) ([]byte, error)
	// announcements are the unsolicited frames that tell the segment mac
	// now holds addr.
	announcements(mac net.HardwareAddr, addr netip.Addr) ([][]byte, error)
}

// question is a request for the MAC of target, from sender.
type question struct {
	target netip.Addr
	// senderIP is where the answer goes at the protocol layer; the
	// unspecified IPv6 address for a duplicate address detection probe.
	senderIP netip.Addr
	// senderMAC is where the answer goes at the Ethernet layer; nil when
	// the answer is multicast.
	senderMAC net.HardwareAddr
}
