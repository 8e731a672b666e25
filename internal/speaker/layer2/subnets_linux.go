package layer2

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"syscall"
)

// addSubnets fills in each link's addresses and subnets from an address
// dump and a route dump of the same namespace.
func addSubnets(links []Link) error {
	byIndex := make(map[int]*Link, len(links))
	for i := range links {
		byIndex[links[i].Index] = &links[i]
	}
	b, err := syscall.NetlinkRIB(syscall.RTM_GETADDR, syscall.AF_UNSPEC)
	if err != nil {
		return os.NewSyscallError("netlinkrib", err)
	}
	addrs, err := parseAddrs(b)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if l := byIndex[a.index]; l != nil {
			l.Addrs = append(l.Addrs, a.prefix.Addr())
			addSubnet(l, a.prefix.Masked())
		}
	}
	if b, err = syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_UNSPEC); err != nil {
		return os.NewSyscallError("netlinkrib", err)
	}
	routes, err := parseRoutes(b)
	if err != nil {
		return err
	}
	for _, r := range routes {
		if l := byIndex[r.index]; l != nil {
			addSubnet(l, r.prefix)
		}
	}
	return nil
}

// addSubnet adds p to l's subnets unless it is a single host: a /32 or
// /128 address or route says one host is there (a pod behind a Calico
// veth, an address kube-proxy parks on a dummy device), not that the LAN
// of the hosts asking for an address is.
func addSubnet(l *Link, p netip.Prefix) {
	if p.IsSingleIP() || slices.Contains(l.Prefixes, p) {
		return
	}
	l.Prefixes = append(l.Prefixes, p)
}

// onLink is an address or a route and the interface it is on.
type onLink struct {
	index  int
	prefix netip.Prefix
}

// parseAddrs decodes an RTM_GETADDR dump: each address with its prefix
// length (IFA_LOCAL for IPv4, whose IFA_ADDRESS is the peer on
// point-to-point links; IFA_ADDRESS for IPv6).
func parseAddrs(b []byte) ([]onLink, error) {
	msgs, err := dumpOf(b, syscall.RTM_NEWADDR)
	if err != nil {
		return nil, err
	}
	var out []onLink
	for _, m := range msgs {
		if len(m.Data) < syscall.SizeofIfAddrmsg {
			return nil, fmt.Errorf("%w: address message of %d bytes", errNetlink, len(m.Data))
		}
		family, bits := m.Data[0], int(m.Data[1])
		index := int(binary.NativeEndian.Uint32(m.Data[4:8]))
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return nil, fmt.Errorf("%w: address attributes: %v", errNetlink, err)
		}
		want := uint16(syscall.IFA_ADDRESS)
		if family == syscall.AF_INET {
			want = syscall.IFA_LOCAL
		}
		for _, a := range attrs {
			if a.Attr.Type != want {
				continue
			}
			if addr, ok := netip.AddrFromSlice(a.Value); ok {
				if p, err := addr.Prefix(bits); err == nil {
					out = append(out, onLink{index: index, prefix: netip.PrefixFrom(addr, p.Bits())})
				}
			}
		}
	}
	return out, nil
}

// rtTableMain is RT_TABLE_MAIN (linux/rtnetlink.h).
const rtTableMain = 254

// parseRoutes decodes an RTM_GETROUTE dump, keeping the routes that put a
// subnet on an interface: unicast, in the main table, through one
// interface without a gateway, not a default route. Routes of other
// tables (local addresses, policy routing) and through gateways say
// nothing about who is on the link.
func parseRoutes(b []byte) ([]onLink, error) {
	msgs, err := dumpOf(b, syscall.RTM_NEWROUTE)
	if err != nil {
		return nil, err
	}
	var out []onLink
	for _, m := range msgs {
		if r, ok, err := parseRoute(m); err != nil {
			return nil, err
		} else if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func parseRoute(m *syscall.NetlinkMessage) (onLink, bool, error) {
	if len(m.Data) < syscall.SizeofRtMsg {
		return onLink{}, false, fmt.Errorf("%w: route message of %d bytes", errNetlink, len(m.Data))
	}
	family, bits, table, kind := m.Data[0], int(m.Data[1]), uint32(m.Data[4]), m.Data[7]
	if kind != syscall.RTN_UNICAST || bits == 0 || (family != syscall.AF_INET && family != syscall.AF_INET6) {
		return onLink{}, false, nil
	}
	attrs, err := syscall.ParseNetlinkRouteAttr(m)
	if err != nil {
		return onLink{}, false, fmt.Errorf("%w: route attributes: %v", errNetlink, err)
	}
	var r onLink
	var dst netip.Addr
	for _, a := range attrs {
		switch a.Attr.Type {
		case syscall.RTA_GATEWAY, syscall.RTA_MULTIPATH:
			return onLink{}, false, nil
		case syscall.RTA_TABLE:
			if len(a.Value) >= 4 {
				table = binary.NativeEndian.Uint32(a.Value[:4])
			}
		case syscall.RTA_OIF:
			if len(a.Value) >= 4 {
				r.index = int(binary.NativeEndian.Uint32(a.Value[:4]))
			}
		case syscall.RTA_DST:
			dst, _ = netip.AddrFromSlice(a.Value)
		}
	}
	if table != rtTableMain || r.index == 0 || !dst.IsValid() {
		return onLink{}, false, nil
	}
	p, err := dst.Prefix(bits)
	if err != nil {
		return onLink{}, false, nil
	}
	r.prefix = p
	return r, true, nil
}
