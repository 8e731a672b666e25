package election

import (
	"bytes"
	"crypto/sha256"
	"net/netip"
)

// Candidate is a node that may announce an address: a live speaker on a
// node the advertisement selects, eligible for the Service. Weight is the
// node's preference; higher wins.
type Candidate struct {
	Node   string
	Weight int
}

// Owner picks the node that announces addr: highest Weight first, then the
// lowest SHA-256 digest of node + "#" + addr, then the lowest name. The
// answer is independent of the order of candidates and of duplicates.
// Candidates with an empty Node are ignored; ok is false when none is
// left.
func Owner(addr netip.Addr, candidates []Candidate) (node string, ok bool) {
	top, ok := maxWeight(candidates)
	if !ok {
		return "", false
	}
	k := newKeyer(addr)
	var best string
	var bestSum [sha256.Size]byte
	for _, c := range candidates {
		if c.Node == "" || c.Weight != top || c.Node == best {
			continue
		}
		sum := k.sum(c.Node)
		if best == "" || less(sum, c.Node, bestSum, best) {
			best, bestSum = c.Node, sum
		}
	}
	return best, true
}

// maxWeight is the highest weight among candidates with a name.
func maxWeight(candidates []Candidate) (int, bool) {
	top, found := 0, false
	for _, c := range candidates {
		if c.Node == "" {
			continue
		}
		if !found || c.Weight > top {
			top, found = c.Weight, true
		}
	}
	return top, found
}

// less orders two candidates of equal weight: lower digest, then lower name.
func less(sum [sha256.Size]byte, node string, than [sha256.Size]byte, thanNode string) bool {
	if c := bytes.Compare(sum[:], than[:]); c != 0 {
		return c < 0
	}
	return node < thanNode
}

// keyer hashes node + "#" + addr for one address. Names up to the
// buffer's size hash without allocating.
type keyer struct {
	suffix [48]byte // "#" + the address's text: at most 40 bytes unmapped and unzoned
	n      int
	buf    [160]byte
}

func newKeyer(addr netip.Addr) keyer {
	var k keyer
	k.suffix[0] = '#'
	k.n = len(addr.Unmap().WithZone("").AppendTo(k.suffix[:1]))
	return k
}

func (k *keyer) sum(node string) [sha256.Size]byte {
	b := append(k.buf[:0], node...)
	b = append(b, k.suffix[:k.n]...)
	return sha256.Sum256(b)
}
