package inspect

import (
	"slices"
	"strconv"

	"github.com/steadylb/steadylb/internal/ipam"
)

// PoolRow is one family of one pool.
type PoolRow struct {
	Pool       string `json:"pool"`
	Family     string `json:"family"`
	AutoAssign bool   `json:"autoAssign"`
	// Size, Assigned, Reserved and Free are decimal counts (an IPv6 pool
	// may hold more than 2^64 addresses); Size = Assigned + Reserved +
	// Free. Assigned are held by Services; Reserved are kept by
	// AddressReservations for a Service that does not hold them (yet),
	// Retained of them for a deleted Service. The pool's status counts
	// Reserved as assigned: MetalLB's status has no field for them.
	Size     string `json:"size"`
	Assigned string `json:"assigned"`
	Reserved string `json:"reserved"`
	Retained string `json:"retained"`
	Free     string `json:"free"`
	// Waiting are the Services without an address that this pool could
	// serve but for lack of room (or a requested address held by others).
	Waiting []string `json:"waiting"`
}

// Pools returns a row per pool and family the pool has, by pool name,
// IPv4 first. It reads the decisions KeepWaiting keeps.
func (s *State) Pools() []PoolRow {
	waiting := s.waitingByPool()
	reserved := s.reservedByPool()
	var rows []PoolRow
	for _, st := range s.Replayed.Book.AllStats() {
		p, _ := s.Replayed.Config.Pool(st.Pool)
		for _, f := range []struct {
			fam   ipam.Family
			has   bool
			stats ipam.FamilyStats
		}{{ipam.IPv4, p.HasIPv4(), st.IPv4}, {ipam.IPv6, p.HasIPv6(), st.IPv6}} {
			if !f.has {
				continue
			}
			k := poolFamily{st.Pool, f.fam}
			r := reserved[k]
			rows = append(rows, PoolRow{Pool: st.Pool, Family: f.fam.String(), AutoAssign: p.AutoAssign(),
				Size: f.stats.Total.String(), Assigned: minus(f.stats.Assigned, r.all), Free: f.stats.Available.String(),
				Reserved: strconv.Itoa(r.all), Retained: strconv.Itoa(r.retained),
				Waiting: append([]string{}, waiting[k]...)})
		}
	}
	return rows
}

// minus subtracts the reserved addresses, which the book counts as held,
// from its count of held addresses.
func minus(held ipam.Count, reserved int) string {
	n, ok := held.Uint64()
	if !ok || n < uint64(reserved) {
		return held.String()
	}
	return strconv.FormatUint(n-uint64(reserved), 10)
}

type poolFamily struct {
	pool string
	fam  ipam.Family
}

type reservedCount struct{ all, retained int }

// reservedByPool counts the addresses reservations keep, per pool and
// family.
func (s *State) reservedByPool() map[poolFamily]reservedCount {
	out := map[poolFamily]reservedCount{}
	for _, r := range s.Replayed.Reservations {
		for _, a := range r.Held {
			k := poolFamily{r.Pool, ipam.FamilyOf(a)}
			c := out[k]
			c.all++
			if r.Retained {
				c.retained++
			}
			out[k] = c
		}
	}
	return out
}

// waitingByPool files each Service without an address under every pool
// and family its explanation says would serve it but has no room.
func (s *State) waitingByPool() map[poolFamily][]string {
	out := map[poolFamily][]string{}
	for _, v := range s.Replayed.Verdicts {
		if len(v.Addrs) > 0 {
			continue
		}
		for _, pv := range s.considerPools(v) {
			if pv.Verdict != VerdictNoRoom {
				continue
			}
			for _, f := range pv.families {
				k := poolFamily{pv.Pool, f}
				out[k] = append(out[k], v.Service.String())
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}
