package layer2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"
)

// SystemLinks lists the interfaces of the calling thread's network
// namespace, with their addresses and subnets, from three netlink dumps
// (links, addresses, routes). It reads the master index from the link dump
// (IFLA_MASTER), so unlike /sys/class/net it needs no sysfs mounted for the
// namespace.
func SystemLinks() ([]Link, error) {
	b, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", os.NewSyscallError("netlinkrib", err))
	}
	links, err := parseLinks(b)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	if err := addSubnets(links); err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	return links, nil
}

var errNetlink = errors.New("malformed netlink link dump")

// dumpOf returns the messages of type typ in a netlink dump, up to its
// NLMSG_DONE; an NLMSG_ERROR before that fails the dump.
func dumpOf(b []byte, typ uint16) ([]*syscall.NetlinkMessage, error) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNetlink, err)
	}
	var out []*syscall.NetlinkMessage
	for i := range msgs {
		switch msgs[i].Header.Type {
		case syscall.NLMSG_DONE:
			return out, nil
		case syscall.NLMSG_ERROR:
			return nil, fmt.Errorf("%w: kernel reported an error", errNetlink)
		case typ:
			out = append(out, &msgs[i])
		}
	}
	return out, nil
}

// parseLinks decodes an RTM_GETLINK dump.
func parseLinks(b []byte) ([]Link, error) {
	msgs, err := dumpOf(b, syscall.RTM_NEWLINK)
	if err != nil {
		return nil, err
	}
	var links []Link
	for _, m := range msgs {
		l, err := parseLink(m)
		if err != nil {
			return nil, err
		}
		links = append(links, l)
	}
	return links, nil
}

// iflaCarrierUpCount is IFLA_CARRIER_UP_COUNT (linux/if_link.h, since
// 4.16), which package syscall does not name.
const iflaCarrierUpCount = 47

// Linux interface flags (netdevice(7)) that net.Flags has names for.
var linkFlags = []struct {
	linux uint32
	flag  net.Flags
}{
	{syscall.IFF_UP, net.FlagUp},
	{syscall.IFF_BROADCAST, net.FlagBroadcast},
	{syscall.IFF_LOOPBACK, net.FlagLoopback},
	{syscall.IFF_POINTOPOINT, net.FlagPointToPoint},
	{syscall.IFF_MULTICAST, net.FlagMulticast},
	{syscall.IFF_RUNNING, net.FlagRunning},
}

func parseLink(m *syscall.NetlinkMessage) (Link, error) {
	if len(m.Data) < syscall.SizeofIfInfomsg {
		return Link{}, fmt.Errorf("%w: link message of %d bytes", errNetlink, len(m.Data))
	}
	var l Link
	l.Index = int(int32(binary.NativeEndian.Uint32(m.Data[4:8])))
	flags := binary.NativeEndian.Uint32(m.Data[8:12])
	for _, f := range linkFlags {
		if flags&f.linux != 0 {
			l.Flags |= f.flag
		}
	}
	l.NoARP = flags&syscall.IFF_NOARP != 0
	attrs, err := syscall.ParseNetlinkRouteAttr(m)
	if err != nil {
		return Link{}, fmt.Errorf("%w: link %d attributes: %v", errNetlink, l.Index, err)
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case syscall.IFLA_IFNAME:
			l.Name = cString(a.Value)
		case syscall.IFLA_ADDRESS:
			// Loopback reports all zeros: no address, as net.Interfaces
			// says too.
			if slices.ContainsFunc(a.Value, func(b byte) bool { return b != 0 }) {
				l.HardwareAddr = net.HardwareAddr(slices.Clone(a.Value))
			}
		case syscall.IFLA_MASTER:
			if len(a.Value) >= 4 {
				l.MasterIndex = int(binary.NativeEndian.Uint32(a.Value[:4]))
			}
		case iflaCarrierUpCount:
			if len(a.Value) >= 4 {
				l.CarrierUps = binary.NativeEndian.Uint32(a.Value[:4])
			}
		}
	}
	return l, nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
