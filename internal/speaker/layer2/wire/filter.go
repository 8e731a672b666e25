package wire

import (
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"golang.org/x/net/bpf"
	"golang.org/x/net/ipv6"
)

// Offsets in an untagged Ethernet frame. Packet sockets see frames with the
// VLAN tag already taken off (the kernel moves it to metadata), so the
// programs need not look for one.
const (
	offEtherType  = 12
	offARPOp      = 14 + 6
	offNextHeader = 14 + 6
	offICMPType   = 14 + ipv6HeaderLen
	acceptAll     = 0xffff
)

// ARPFilter passes ARP frames with operation op and drops everything else
// in the kernel, so a busy segment's other traffic never wakes the reader.
func ARPFilter(op arp.Operation) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(ethernet.EtherTypeARP), SkipTrue: 3},
		bpf.LoadAbsolute{Off: offARPOp, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(op), SkipTrue: 1},
		bpf.RetConstant{Val: acceptAll},
		bpf.RetConstant{Val: 0},
	}
}

// AnyARPFilter passes every ARP frame.
func AnyARPFilter() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(ethernet.EtherTypeARP), SkipTrue: 1},
		bpf.RetConstant{Val: acceptAll},
		bpf.RetConstant{Val: 0},
	}
}

// NDPFilter passes IPv6 frames whose first next header is ICMPv6 with
// message type t. On an IPv6 socket this is what keeps the responder from
// copying every IPv6 packet of the host to user space.
func NDPFilter(t ipv6.ICMPType) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(ethernet.EtherTypeIPv6), SkipTrue: 5},
		bpf.LoadAbsolute{Off: offNextHeader, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nextICMPv6, SkipTrue: 3},
		bpf.LoadAbsolute{Off: offICMPType, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(t), SkipTrue: 1},
		bpf.RetConstant{Val: acceptAll},
		bpf.RetConstant{Val: 0},
	}
}
