package bgp

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
)

// update advertises and withdraws on this session, after the routes a
// reset carried over (owed); the session may connect once it returned
// nil (see catchUp). A call that fails leaves what it could not do for
// the next call.
func (r *runner) update(advertise []Route, withdraw []netip.Prefix) error {
	if len(r.owed) > 0 {
		if err := r.send(slices.Collect(maps.Values(r.owed)), nil); err != nil {
			return fmt.Errorf("%w (re-advertising the %d routes the session had before its reset)", err, len(r.owed))
		}
		r.owed = nil
	}
	if err := r.send(advertise, withdraw); err != nil {
		return err
	}
	r.ready = true
	return nil
}

// behind reports a session that owes routes from before its reset, or
// whose connection failed after its routes were in place.
func (r *runner) behind() bool { return len(r.owed) > 0 || (r.ready && !r.connected) }

// inherit takes over what the session it replaces held: its routes, owed
// to GoBGP until the next update, and whether it was to connect.
func (r *runner) inherit(old *runner) {
	r.updates = old.updates
	r.ready = old.ready
	if len(old.routes)+len(old.owed) > 0 {
		r.owed = maps.Clone(old.routes)
		maps.Copy(r.owed, old.owed)
	}
}

// send hands GoBGP the paths of advertise and withdraw. GoBGP is asked
// first; the bookkeeping follows only what it accepted, so a failed call
// leaves the session as it was. Routes of a family the session does not
// carry are kept (they are sent if the session is changed to DualStack)
// but not sent.
func (r *runner) send(advertise []Route, withdraw []netip.Prefix) error {
	if err := r.resolve(); err != nil {
		return err
	}
	add := make([]*apiutil.Path, 0, len(advertise))
	for _, rt := range advertise {
		if !r.cfg.carries(rt.Prefix) {
			continue
		}
		nh, err := r.nextHop(rt.Prefix)
		if err != nil {
			return err
		}
		p, err := toPath(rt, r.cfg.internal(), nh)
		if err != nil {
			return fmt.Errorf("session %q: %w", r.cfg.Name, err)
		}
		add = append(add, p)
	}
	both := prefixSet(advertise, len(withdraw) > 0)
	del := make([]*apiutil.Path, 0, len(withdraw))
	for _, pfx := range withdraw {
		if _, ok := r.routes[pfx]; !ok || !r.cfg.carries(pfx) || both[pfx] {
			continue
		}
		nh, err := r.nextHop(pfx)
		if err != nil {
			return err
		}
		p, err := withdrawPath(pfx, nh)
		if err != nil {
			return fmt.Errorf("session %q: %w", r.cfg.Name, err)
		}
		del = append(del, p)
	}
	if len(add) > 0 {
		if _, err := r.srv.AddPath(apiutil.AddPathRequest{Paths: add}); err != nil {
			return fmt.Errorf("session %q: advertise: %w", r.cfg.Name, err)
		}
	}
	if len(del) > 0 {
		if err := r.srv.DeletePath(apiutil.DeletePathRequest{Paths: del}); err != nil {
			r.restore(advertise)
			return fmt.Errorf("session %q: withdraw: %w", r.cfg.Name, err)
		}
	}
	for _, rt := range advertise {
		r.routes[rt.Prefix] = rt
	}
	for _, pfx := range withdraw {
		if !both[pfx] {
			delete(r.routes, pfx)
		}
	}
	return nil
}

// restore puts back what the advertised routes replaced, after a
// withdrawal failed; best effort, it is logged when it fails too.
func (r *runner) restore(advertise []Route) {
	var back, gone []*apiutil.Path
	for _, rt := range advertise {
		if !r.cfg.carries(rt.Prefix) {
			continue
		}
		nh, err := r.nextHop(rt.Prefix)
		if err != nil {
			continue
		}
		if old, ok := r.routes[rt.Prefix]; ok {
			if p, err := toPath(old, r.cfg.internal(), nh); err == nil {
				back = append(back, p)
			}
		} else if p, err := withdrawPath(rt.Prefix, nh); err == nil {
			gone = append(gone, p)
		}
	}
	if len(back) > 0 {
		if _, err := r.srv.AddPath(apiutil.AddPathRequest{Paths: back}); err != nil {
			r.log.Error(err, "restore the routes a failed update replaced")
		}
	}
	if len(gone) > 0 {
		if err := r.srv.DeletePath(apiutil.DeletePathRequest{Paths: gone}); err != nil {
			r.log.Error(err, "withdraw the routes a failed update added")
		}
	}
}

// prefixSet is the prefixes of list, when needed: a prefix both
// advertised and withdrawn in one Update stays advertised.
func prefixSet(list []Route, needed bool) map[netip.Prefix]bool {
	if !needed || len(list) == 0 {
		return nil
	}
	set := make(map[netip.Prefix]bool, len(list))
	for i := range list {
		set[list[i].Prefix] = true
	}
	return set
}

// nextHop is the next hop a prefix is given: unspecified (GoBGP puts the
// session's local address) for the session's own family, an address of
// the local interface for the other family of a dual-stack session.
func (r *runner) nextHop(prefix netip.Prefix) (netip.Addr, error) {
	if r.cfg.families()[0] == familyOf(prefix.Addr()) {
		return netip.Addr{}, nil
	}
	if r.otherHop.IsValid() {
		return r.otherHop, nil
	}
	remote := r.cfg.Address.Unmap()
	if !remote.IsValid() {
		// Unnumbered: the router's link-local address, once resolved.
		remote, _ = netip.ParseAddr(r.neighbor)
	}
	local, err := localAddressTo(remote, r.cfg.Source, r.cfg.VRF)
	if err == nil {
		r.otherHop, err = otherFamilyAddress(local)
	}
	if err != nil {
		return netip.Addr{}, fmt.Errorf("session %q: dualStack: next hop for %s: %w", r.cfg.Name, prefix, err)
	}
	return r.otherHop, nil
}

// resolve finds the router of an unnumbered session: the one IPv6
// link-local neighbor on its interface (GoBGP's own rule; the router must
// have been heard, e.g. by its router advertisements).
func (r *runner) resolve() error {
	if r.neighbor != "" {
		return nil
	}
	if r.cfg.Interface == "" {
		r.neighbor = r.cfg.Address.Unmap().String()
		return nil
	}
	addr, err := oc.GetIPv6LinkLocalNeighborAddress(r.cfg.Interface)
	if err != nil {
		return fmt.Errorf("session %q: interface %s: the router's link-local address: %w", r.cfg.Name, r.cfg.Interface, err)
	}
	r.neighbor = addr
	return nil
}
