package speaker

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"net/netip"
	"slices"
)

// Candidate is a node that may answer for an address, with the summed
// weight of the preferredNodeSelectors that match it.
type Candidate struct {
	Node   string
	Weight int
}

// electOwner picks the node that answers for an address. Every speaker
// must pick the same one from the same inputs, whatever their order. It is
// a variable so that internal/speaker/election can stand in for it.
var electOwner = ownerByHash

// ownerByHash orders candidates by weight (highest first), then by
// sha256(node + "#" + address) (lowest first, MetalLB's key, so addresses
// spread over the nodes), then by name. O(n) in the candidates.
func ownerByHash(addr netip.Addr, candidates []Candidate) (string, bool) {
	if len(candidates) == 0 {
		return "", false
	}
	type scored struct {
		Candidate
		hash [sha256.Size]byte
	}
	all := make([]scored, len(candidates))
	for i, c := range candidates {
		all[i] = scored{c, sha256.Sum256([]byte(c.Node + "#" + addr.String()))}
	}
	best := slices.MinFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), bytes.Compare(a.hash[:], b.hash[:]), cmp.Compare(a.Node, b.Node))
	})
	return best.Node, true
}
