package inspect

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/assign"
)

// prerestorer feeds the Services Load decodes to an assign.Prerestore on
// a goroutine of its own: the decoder hands them over in batches and
// waits for the book only when queuedBatches are queued, and the book
// waits for the pools and the Namespaces, which usually arrive before the
// first Service.
type prerestorer struct {
	lbClass string
	batches chan []*corev1.Service
	batch   []*corev1.Service // being filled by the decoder
	// pools, namespaces and their errors are set once each, each before
	// its send on readyCount.
	pools                         []v1beta1.IPAddressPool
	namespaces                    []corev1.Namespace
	poolsFailed, namespacesFailed bool
	readyCount                    chan struct{}
	done                          chan struct{}
	restored                      *assign.Prerestore // nil: none to hand on
}

// prerestoreBatch is how many Services the decoder hands over at once;
// queuedBatches how many can wait before the decoder waits (65,536
// Services: only a book still waiting for the pools or the Namespaces
// holds them up).
const (
	prerestoreBatch = 64
	queuedBatches   = 1024
)

func startPrerestore(lbClass string) *prerestorer {
	p := &prerestorer{lbClass: lbClass, batches: make(chan []*corev1.Service, queuedBatches),
		readyCount: make(chan struct{}, 2), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *prerestorer) setPools(pools []v1beta1.IPAddressPool, err error) {
	p.pools, p.poolsFailed = pools, err != nil
	p.readyCount <- struct{}{}
}

func (p *prerestorer) setNamespaces(namespaces []corev1.Namespace, err error) {
	p.namespaces, p.namespacesFailed = namespaces, err != nil
	p.readyCount <- struct{}{}
}

// add is servicelist.List's each: called on the decoder's goroutine.
func (p *prerestorer) add(svc *corev1.Service) {
	if p.batch == nil {
		p.batch = make([]*corev1.Service, 0, prerestoreBatch)
	}
	if p.batch = append(p.batch, svc); len(p.batch) == prerestoreBatch {
		p.batches <- p.batch
		p.batch = nil
	}
}

// listed says the decoder is done, on its goroutine.
func (p *prerestorer) listed() {
	if len(p.batch) > 0 {
		p.batches <- p.batch
	}
	close(p.batches)
}

func (p *prerestorer) run() {
	defer close(p.done)
	<-p.readyCount
	<-p.readyCount
	var restore *assign.Prerestore
	if !p.poolsFailed && !p.namespacesFailed {
		// An error is the replay's to report; without a Prerestore it
		// meets the same one.
		restore, _ = assign.NewPrerestore(p.pools, p.namespaces, p.lbClass)
	}
	for batch := range p.batches {
		if restore != nil {
			for _, svc := range batch {
				restore.Add(svc)
			}
		}
	}
	p.restored = restore
}

// result waits for the restore and returns it, nil if there is none. Once
// every LIST has ended.
func (p *prerestorer) result() *assign.Prerestore {
	<-p.done
	return p.restored
}
