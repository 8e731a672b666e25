package inspect

import (
	"slices"

	"github.com/steadylb/steadylb/internal/ipam"
)

// PoolRow is one family of one pool.
type PoolRow struct {
	Pool       string `json:"pool"`
	Family     string `json:"family"`
	AutoAssign bool   `json:"autoAssign"`
	// Size, Assigned and Free are decimal counts (an IPv6 pool may hold
	// more than 2^64 addresses).
	Size     string `json:"size"`
	Assigned string `json:"assigned"`
	Free     string `json:"free"`
	// Waiting are the Services without an address that this pool could
	// serve but for lack of room (or a requested address held by others).
	Waiting []string `json:"waiting"`
}

// Pools returns a row per pool and family the pool has, by pool name,
// IPv4 first. Retained and reserved addresses are not shown: the address
// book has no such state yet.
func (s *State) Pools() []PoolRow {
	waiting := s.waitingByPool()
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
			rows = append(rows, PoolRow{Pool: st.Pool, Family: f.fam.String(), AutoAssign: p.AutoAssign(),
				Size: f.stats.Total.String(), Assigned: f.stats.Assigned.String(), Free: f.stats.Available.String(),
				Waiting: append([]string{}, waiting[poolFamily{st.Pool, f.fam}]...)})
		}
	}
	return rows
}

type poolFamily struct {
	pool string
	fam  ipam.Family
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
