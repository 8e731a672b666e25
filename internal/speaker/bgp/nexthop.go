package bgp

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// localAddressTo is the address this host sends from to reach remote:
// source when it is set, else the kernel's choice (in vrf, when set),
// learnt from a connected UDP socket that sends nothing.
func localAddressTo(remote, source netip.Addr, vrf string) (netip.Addr, error) {
	if source.IsValid() {
		return source.Unmap(), nil
	}
	d := net.Dialer{Control: bindToDevice(vrf)}
	c, err := d.Dial("udp", netip.AddrPortFrom(remote, 179).String())
	if err != nil {
		return netip.Addr{}, fmt.Errorf("find the local address towards %s: %w", remote, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap().WithZone(""), nil
}

// bindToDevice binds a socket to a VRF device before it connects, so
// the VRF's table routes it; nothing for "".
func bindToDevice(device string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		if device == "" {
			return nil
		}
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.BindToDevice(int(fd), device) }); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("bind to VRF device %q: %w", device, serr)
		}
		return nil
	}
}

// vrfExists checks that a session's VRF device is there: until it is,
// the session does not connect (GoBGP would retry only every connect
// time), and says why.
func vrfExists(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return fmt.Errorf("VRF device %q: %w", name, err)
	}
	return nil
}

// otherFamilyAddress is the next hop a dual-stack session gives the
// prefixes of the family it does not run over: the first global unicast
// address of that family on the interface that holds local.
func otherFamilyAddress(local netip.Addr) (netip.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifi := range ifs {
		addrs, err := interfaceAddrs(ifi)
		if err != nil {
			return netip.Addr{}, err
		}
		holds := false
		for _, a := range addrs {
			if a == local {
				holds = true
			}
		}
		if !holds {
			continue
		}
		for _, a := range addrs {
			if a.Is4() != local.Is4() && a.IsGlobalUnicast() {
				return a, nil
			}
		}
		return netip.Addr{}, fmt.Errorf("interface %s holds %s but no global address of the other family to use as next hop", ifi.Name, local)
	}
	return netip.Addr{}, fmt.Errorf("no interface holds %s", local)
}

func interfaceAddrs(ifi net.Interface) ([]netip.Addr, error) {
	raw, err := ifi.Addrs()
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
	}
	out := make([]netip.Addr, 0, len(raw))
	for _, r := range raw {
		if n, ok := r.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}

// onSharedNetwork reports whether remote is inside the prefix of an
// address of one of this host's interfaces: a router one hop away.
func onSharedNetwork(remote netip.Addr) (bool, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return false, fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifi := range ifs {
		raw, err := ifi.Addrs()
		if err != nil {
			return false, fmt.Errorf("addresses of %s: %w", ifi.Name, err)
		}
		for _, a := range raw {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			addr, ok := netip.AddrFromSlice(n.IP)
			bits, _ := n.Mask.Size()
			if !ok {
				continue
			}
			addr = addr.Unmap()
			if addr.Is4() != remote.Is4() || (addr.Is4() && bits > 32) {
				continue
			}
			if p := netip.PrefixFrom(addr, bits).Masked(); bits < addr.BitLen() && p.Contains(remote) {
				return true, nil
			}
		}
	}
	return false, nil
}
