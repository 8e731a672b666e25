package bgpstatus

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/statusobj"
)

// NamePrefix is the generateName of every object, MetalLB's.
const NamePrefix = "bgp-"

// Options configure a Writer.
type Options struct {
	// Namespace is where the objects live: the speaker's namespace.
	Namespace string
	// Node is this node's name.
	Node string
}

// Writer creates, updates and deletes one node's objects, at most one per
// Service. It remembers what it last wrote rather than reading the cache,
// so a cache that lags behind its own create never makes it create a
// second object. Methods are safe for concurrent use; calls about one
// Service must not overlap.
type Writer struct {
	client client.Client
	opts   Options

	mu    sync.Mutex // guards owner
	owner *metav1.OwnerReference
	held  *statusobj.Held[*v1beta1.ServiceBGPStatus]
}

// NewWriter returns a Writer that holds nothing yet; see Adopt.
func NewWriter(c client.Client, opts Options) *Writer {
	return &Writer{client: c, opts: opts, held: statusobj.NewHeld[*v1beta1.ServiceBGPStatus]()}
}

// SetOwner makes owner (the speaker Pod, as in MetalLB) the owner of the
// objects created from now on.
func (w *Writer) SetOwner(owner *metav1.OwnerReference) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owner = owner
}

// NodeOf returns the node an object reports for: its label, or status.node.
func NodeOf(st *v1beta1.ServiceBGPStatus) string { return statusobj.NodeOf(st, st.Status.Node) }

// Adopt takes this node's objects left by an earlier run as its own: the
// oldest per Service is kept, the others and those naming no Service are
// deleted. Call it once, before anything else.
func (w *Writer) Adopt(ctx context.Context, objs []v1beta1.ServiceBGPStatus) error {
	copies := make([]*v1beta1.ServiceBGPStatus, len(objs))
	for i := range objs {
		copies[i] = objs[i].DeepCopy()
	}
	return w.held.Adopt(ctx, w.client, copies)
}

// Held reports whether this node holds an object for svc.
func (w *Writer) Held(svc types.NamespacedName) bool {
	_, ok := w.held.Get(svc)
	return ok
}

// Services are the Services this node holds an object for, sorted.
func (w *Writer) Services() []types.NamespacedName { return w.held.Services() }

// Lost tells the Writer that an object of this node was deleted, by
// whoever: when it is the one held for its Service, the Writer forgets
// it, so the next Report creates a new one, and Lost returns that Service.
func (w *Writer) Lost(st *v1beta1.ServiceBGPStatus) (svc types.NamespacedName, forgotten bool) {
	return w.held.Lost(st)
}

// Report makes this node's object for svc exist and list peers (sorted
// BGPPeer names): a create (and its status) when there is none, else at
// most one status patch.
func (w *Writer) Report(ctx context.Context, svc types.NamespacedName, peers []string) error {
	return w.report(ctx, svc, peers, true)
}

func (w *Writer) report(ctx context.Context, svc types.NamespacedName, peers []string, retry bool) error {
	cur, ok := w.held.Get(svc)
	if !ok {
		var err error
		if cur, err = w.create(ctx, svc); err != nil {
			return err
		}
	}
	want := v1beta1.MetalLBServiceBGPStatus{Node: w.opts.Node, ServiceName: svc.Name, ServiceNamespace: svc.Namespace,
		Peers: slices.Clone(peers)}
	if equality.Semantic.DeepEqual(cur.Status, want) {
		return nil
	}
	next := cur.DeepCopy()
	next.Status = want
	err := w.client.Status().Patch(ctx, next, client.MergeFrom(cur))
	switch {
	case retry && apierrors.IsNotFound(err):
		w.held.Forget(svc) // deleted under us: write it again
		return w.report(ctx, svc, peers, false)
	case retry && apierrors.IsInvalid(err):
		// An adopted object whose immutable fields name someone else.
		if err := w.Release(ctx, svc); err != nil {
			return err
		}
		return w.report(ctx, svc, peers, false)
	case err != nil:
		return fmt.Errorf("update status of ServiceBGPStatus %s/%s of service %s: %w", cur.Namespace, cur.Name, svc, err)
	}
	w.held.Put(svc, next)
	return nil
}

func (w *Writer) create(ctx context.Context, svc types.NamespacedName) (*v1beta1.ServiceBGPStatus, error) {
	st := &v1beta1.ServiceBGPStatus{ObjectMeta: metav1.ObjectMeta{GenerateName: NamePrefix, Namespace: w.opts.Namespace,
		Labels: map[string]string{v1beta1.LabelNode: w.opts.Node, v1beta1.LabelServiceName: svc.Name,
			v1beta1.LabelServiceNamespace: svc.Namespace}}}
	w.mu.Lock()
	if w.owner != nil {
		st.OwnerReferences = []metav1.OwnerReference{*w.owner}
	}
	w.mu.Unlock()
	if err := w.client.Create(ctx, st); err != nil {
		return nil, fmt.Errorf("create ServiceBGPStatus for service %s: %w", svc, err)
	}
	w.held.Put(svc, st)
	return st, nil
}

// Release deletes this node's object for svc, if it holds one.
func (w *Writer) Release(ctx context.Context, svc types.NamespacedName) error {
	cur, ok := w.held.Get(svc)
	if !ok {
		return nil
	}
	if err := statusobj.Delete(ctx, w.client, cur); err != nil {
		return fmt.Errorf("release service %s: %w", svc, err)
	}
	w.held.Forget(svc)
	return nil
}
