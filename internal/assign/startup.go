package assign

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
	"github.com/steadylb/steadylb/internal/lbclass"
)

// StartupSteps orders the owned Services for the barrier's serving steps,
// indexed by Step: those that kept every address they show, the pending
// ones whose allocation record names addresses, those that lost one in
// Restore, and the other pending ones, each oldest first.
func StartupSteps(owned, lost []*corev1.Service) [4][]*corev1.Service {
	kept, pending := splitByStatus(owned, lost)
	recalling, pending := splitByRecord(pending)
	return [4][]*corev1.Service{StepKept: kept, StepRecalled: recalling, StepLost: lost, StepPending: pending}
}

// splitByStatus separates the Services that kept every address they show
// from the pending ones (showing none); both keep the oldest-first order.
func splitByStatus(owned, lost []*corev1.Service) (kept, pending []*corev1.Service) {
	isLost := make(map[*corev1.Service]bool, len(lost))
	for _, svc := range lost {
		isLost[svc] = true
	}
	kept = make([]*corev1.Service, 0, len(owned)-len(lost))
	for _, svc := range owned {
		switch {
		case !ShowsAddress(svc):
			pending = append(pending, svc)
		case !isLost[svc]:
			kept = append(kept, svc)
		}
	}
	return kept, pending
}

// splitByRecord separates the pending Services whose allocation record
// names addresses from the others; both keep their order.
func splitByRecord(pending []*corev1.Service) (recalling, rest []*corev1.Service) {
	for _, svc := range pending {
		if hasRecall(svc) {
			recalling = append(recalling, svc)
		} else {
			rest = append(rest, svc)
		}
	}
	return recalling, rest
}

// ServeSteps serves the Services of steps 3 to 6 in order. A Service of
// the recall step whose record cannot be honoured (another Service holds
// the addresses, or its pools no longer allow them) takes nothing there:
// serve reports false, and it is served with the pending Services, by age,
// as if it had no record. Otherwise it would take a fresh address before
// older pending Services.
func ServeSteps(steps [4][]*corev1.Service, serve func(*corev1.Service, Step) (bool, error)) error {
	var deferred []*corev1.Service
	for i, svcs := range steps {
		step := Step(i)
		if step == StepPending {
			svcs = mergeOldestFirst(deferred, svcs)
		}
		for _, svc := range svcs {
			done, err := serve(svc, step)
			if err != nil {
				return err
			}
			if !done {
				deferred = append(deferred, svc)
			}
		}
	}
	return nil
}

// mergeOldestFirst merges two lists sorted oldest first.
func mergeOldestFirst(a, b []*corev1.Service) []*corev1.Service {
	out := make([]*corev1.Service, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if OlderFirst(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// OwnedOldestFirst picks the Services of lbClass (lbclass.Owns) out of a
// list, oldest first, ties by namespace/name.
func OwnedOldestFirst(items []corev1.Service, lbClass string) []*corev1.Service {
	owned := make([]*corev1.Service, 0, len(items))
	for i := range items {
		if lbclass.Owns(&items[i], lbClass) {
			owned = append(owned, &items[i])
		}
	}
	return sortOldestFirst(owned)
}

// halvesSortedFrom is how many Services sortOldestFirst sorts in two
// halves at once: fewer take less time than a goroutine costs.
const halvesSortedFrom = 512

// sortOldestFirst sorts svcs oldest first, in two halves at once then
// merged once there are many: at 10,000 Services the sort is 2.4 ms of
// the plugin's work after its LIST, on one core while the other waits.
// OlderFirst orders every Service apart from any other, so the result is
// the one order whatever the sort.
func sortOldestFirst(svcs []*corev1.Service) []*corev1.Service {
	if len(svcs) < halvesSortedFrom {
		slices.SortFunc(svcs, OlderFirst)
		return svcs
	}
	half := len(svcs) / 2
	var wg sync.WaitGroup
	wg.Go(func() { slices.SortFunc(svcs[half:], OlderFirst) })
	slices.SortFunc(svcs[:half], OlderFirst)
	wg.Wait()
	return mergeOldestFirst(svcs[:half], svcs[half:])
}

// OlderFirst orders Services by creation, ties by namespace/name: the
// order of every step of the startup barrier, and the order in which
// Services waiting for room are served.
func OlderFirst(a, b *corev1.Service) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// restored is step 2 of the barrier: the book with every assignment shown
// in status registered, what it refused, and the Services that lost an
// address, oldest first.
type restored struct {
	book      *ipam.Book
	conflicts []ipam.Conflict
	lost      []*corev1.Service
	// read are requests read while restoring, for the decisions (nil:
	// none).
	read *requestReads
}

// restoreBook runs step 2 of the barrier. It only reads: the startup
// barrier and the read-only Replay both call it. nsLabels returns a
// namespace's labels.
func restoreBook(cfg *config.Config, owned []*corev1.Service, nsLabels func(string) (labels.Set, error)) (restored, error) {
	book, err := newBook(cfg)
	if err != nil {
		return restored{}, err
	}
	// owned is oldest first, Restore's order, and names each Service
	// once: the claims go to the book one by one as they are made, and it
	// keeps their slices, which claimOf makes anew for each.
	claims := makeClaims(cfg, owned, nsLabels)
	conflicts := book.RestoreSorted(len(owned), claims.each)
	if err := claims.stop(); err != nil {
		return restored{}, err
	}
	r := restored{book: book, conflicts: conflicts}
	r.lost = servicesOf(owned, r.conflicts)
	return r, nil
}

// newBook is an empty book over cfg's pools.
func newBook(cfg *config.Config) (*ipam.Book, error) {
	book, err := ipam.New(ipamPools(cfg))
	if err != nil {
		return nil, fmt.Errorf("startup barrier: build address book: %w", err)
	}
	return book, nil
}

// claimMaker reads the claims of the owned Services that show addresses
// on a goroutine of its own, a batch ahead of the book that registers
// them: reading a claim (the Service's request, its pools, its record)
// depends on nothing the book does, and with a second core the book's
// work and the reading overlap instead of adding up.
type claimMaker struct {
	made chan []ipam.Claim // batches, in order
	used chan []ipam.Claim // batches the book is done with
	done chan struct{}     // closed by stop: the book is done
	err  error             // nsLabels' error; read once made is closed
}

// claimBatch is how many claims a batch holds: enough that handing one
// over costs nothing beside making them, few enough that the book waits
// for no more than one at the start.
const claimBatch = 256

func makeClaims(cfg *config.Config, owned []*corev1.Service, nsLabels func(string) (labels.Set, error)) *claimMaker {
	// Three batches in all: one being made, one waiting, one in the book;
	// used has room for every one, so the book never waits to give one
	// back. They go round rather than being made anew: at 10,000 claims
	// fresh batches would be 2 MB more memory touched for the first time.
	m := &claimMaker{made: make(chan []ipam.Claim, 1), used: make(chan []ipam.Claim, 3), done: make(chan struct{})}
	m.used <- make([]ipam.Claim, 0, claimBatch)
	m.used <- make([]ipam.Claim, 0, claimBatch)
	go m.make(cfg, owned, nsLabels, make([]ipam.Claim, 0, claimBatch))
	return m
}

func (m *claimMaker) make(cfg *config.Config, owned []*corev1.Service, nsLabels func(string) (labels.Set, error),
	batch []ipam.Claim) {
	defer close(m.made)
	send := func() bool {
		select {
		case m.made <- batch:
		case <-m.done:
			return false
		}
		select {
		case batch = <-m.used:
			batch = batch[:0]
			return true
		case <-m.done:
			return false
		}
	}
	for _, svc := range owned {
		shown := StatusAddresses(svc)
		if len(shown) == 0 {
			continue
		}
		labels, err := nsLabels(svc.Namespace)
		if err != nil {
			m.err = err
			return
		}
		if batch = append(batch, claimOf(cfg, svc, labels, shown)); len(batch) == claimBatch && !send() {
			return
		}
	}
	if len(batch) > 0 {
		select {
		case m.made <- batch:
		case <-m.done:
		}
	}
}

// each yields the claims in order, for Book.RestoreSorted.
func (m *claimMaker) each(yield func(*ipam.Claim) bool) {
	for batch := range m.made {
		for i := range batch {
			if !yield(&batch[i]) {
				return
			}
		}
		m.used <- batch
	}
}

// stop ends the reading if the book stopped before the last claim, waits
// for the reader to finish and returns nsLabels' error, if any.
func (m *claimMaker) stop() error {
	close(m.done)
	for range m.made { // the maker is done once it closes made
	}
	return m.err
}

// Restore runs step 2 of the startup barrier: it builds a book from every
// assignment the owned Services (oldest first) show in status, and
// decides with it and cfg from then on. It reads without the lock and
// takes it to install the book. It returns the claims the book refused and
// the Services that lost an address by them, oldest first.
func (alloc *Allocator) Restore(cfg *config.Config, owned []*corev1.Service,
	nsLabels func(string) (labels.Set, error)) ([]ipam.Conflict, []*corev1.Service, error) {
	r, err := restoreBook(cfg, owned, nsLabels)
	if err != nil {
		return nil, nil, err
	}
	alloc.mu.Lock()
	alloc.book, alloc.cfg = r.book, cfg
	alloc.mu.Unlock()
	return r.conflicts, r.lost, nil
}

// servicesOf picks the Services that conflicts name out of owned, in
// owned's order (oldest first). Conflicts are few, so the lookup is keyed
// by them rather than by every Service.
func servicesOf(owned []*corev1.Service, conflicts []ipam.Conflict) []*corev1.Service {
	if len(conflicts) == 0 {
		return nil
	}
	named := make(map[ipam.ServiceKey]bool, len(conflicts))
	for _, c := range conflicts {
		named[c.Service] = true
	}
	var out []*corev1.Service
	for _, svc := range owned {
		if named[Key(svc)] {
			out = append(out, svc)
		}
	}
	return out
}
