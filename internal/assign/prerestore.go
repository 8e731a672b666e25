package assign

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/internal/lbclass"
)

// Prerestore is the startup barrier's restore (step 2) made while the
// Services are still being listed, in the order they arrive, for a replay
// of the same cluster (Cluster.Prerestored) that then starts with its
// decisions. The kubectl plugin's Service LIST arrives in namespace and
// name order over a hundred milliseconds or more, while the API server
// keeps one core busy and the decoder half of the other: the book's work
// fits beside them, instead of after the last Service. Restoring in
// another order than the barrier's (oldest first) gives the barrier's
// book and refusals only while no refusal depends on the order
// (ipam.Book.RestoreUnordered: an address two Services show, which the
// older keeps), so at the first such refusal a Prerestore gives up and
// the replay restores in order, as the controller does. A refusal about
// the Service alone (an address outside every pool, say, as in a cluster
// another implementation served) is kept for the replay, which serves
// that Service with those that lost an address.
// It also reads each of our Services' requests (annotations, ports,
// eligible pools) as it comes, and the replay's decisions take those
// reads instead of reading every Service again after the LIST (the
// plugin's replay at 10,000 Services: 13.5 ms instead of 17;
// BENCHMARKS.md).
// Not safe for concurrent use.
type Prerestore struct {
	cfg      *config.Config
	nsLabels func(string) (labels.Set, error)
	lbClass  string
	book     *ipam.Book // nil once given up or taken
	added    int        // Services added, ours or not
	// refused are the conflicts the book returned, none depending on the
	// order.
	refused []ipam.Conflict
	// read are the requests of our Services, read as they were added:
	// the replay's decisions read each again otherwise, after the LIST.
	read *requestReads
}

// NewPrerestore starts a restore for a controller configured by pools
// and lbClass, reading namespace labels from namespaces. Its error is
// Replay's for the same pools: ErrNoPools, or an invalid configuration.
func NewPrerestore(pools []v1beta1.IPAddressPool, namespaces []corev1.Namespace, lbClass string) (*Prerestore, error) {
	cfg, err := replayConfig(pools)
	if err != nil {
		return nil, err
	}
	book, err := newBook(cfg)
	if err != nil {
		return nil, err
	}
	return &Prerestore{cfg: cfg, nsLabels: namespaceLabelsOf(namespaces), lbClass: lbClass, book: book,
		read: newRequestReads()}, nil
}

// Add restores the addresses one listed Service shows, if it is ours.
// Every Service of the list goes through Add once, in any order.
func (p *Prerestore) Add(svc *corev1.Service) {
	p.added++
	if p.book == nil || !lbclass.Owns(svc, p.lbClass) {
		return
	}
	nsLabels, _ := p.nsLabels(svc.Namespace) // namespaceLabelsOf never fails
	read := readRequestOf(p.cfg, svc, nsLabels)
	p.read.add(svc, read)
	shown := StatusAddresses(svc)
	if len(shown) == 0 {
		return
	}
	c := read.claim(svc, shown)
	// The book keeps the claim's slices and sorts its ports in place; the
	// decision reads the ports in the Service's order.
	c.Request.Ports = slices.Clone(c.Request.Ports)
	refused := p.book.RestoreUnordered(&c)
	if slices.ContainsFunc(refused, ipam.Conflict.DependsOnOrder) {
		p.book, p.refused, p.read = nil, nil, nil // which claim keeps an address depends on the order
		return
	}
	p.refused = append(p.refused, refused...)
}

// Ready reports whether a replay of services (every Service Add was
// given) would start from this restore: false when a refusal depended on
// the order, the book was taken before, or services are not what was
// added.
func (p *Prerestore) Ready(services []corev1.Service) bool {
	return p != nil && p.book != nil && p.added == len(services)
}

// take hands the restored book over to a replay of services, once: the
// replay's decisions change it. It reports false when the replay must
// restore in order itself (see Ready).
func (p *Prerestore) take(services []corev1.Service) (restored, *config.Config, bool) {
	if !p.Ready(services) {
		return restored{}, nil, false
	}
	ipam.SortConflicts(p.refused) // as RestoreSorted returns them
	r := restored{book: p.book, conflicts: p.refused, read: p.read}
	p.book, p.refused, p.read = nil, nil, nil
	return r, p.cfg, true
}
