package l2status

import (
	"context"
	"fmt"
	"net/netip"
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

// Options configure a Writer.
type Options struct {
	// Namespace is where the objects live: the speaker's namespace, as in
	// MetalLB.
	Namespace string
	// Node is this node's name.
	Node string
	// Owner, when set, becomes every object's owner reference (the speaker
	// Pod, as in MetalLB), so that the garbage collector removes the objects
	// of a speaker that is gone for good.
	Owner *metav1.OwnerReference
}

// Writer creates, updates and deletes one node's objects, at most one per
// Service. It remembers what it last wrote instead of reading the cache, so
// a cache that lags behind its own create never makes it create a second
// object. Merge patches carry no resourceVersion: the Writer is the only
// writer of its objects, so there is nothing to conflict with.
//
// Methods are safe for concurrent use; calls about one Service must not
// overlap.
type Writer struct {
	client client.Client
	opts   Options

	mu   sync.Mutex // guards opts.Owner
	held *statusobj.Held[*v1beta1.ServiceL2Status]
}

// NewWriter returns a Writer that holds nothing yet; see Adopt.
func NewWriter(c client.Client, opts Options) *Writer {
	return &Writer{client: c, opts: opts, held: statusobj.NewHeld[*v1beta1.ServiceL2Status]()}
}

// SetOwner makes owner the owner of the objects written from now on, and
// of the held ones at their next write. Call it before writing.
func (w *Writer) SetOwner(owner *metav1.OwnerReference) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opts.Owner = owner
}

// Adopt takes this node's objects left by an earlier run as its own. Of
// several for one Service it keeps the oldest and deletes the others; one
// that names no Service is deleted. Call it once, before anything else,
// with the objects labelled for this node.
func (w *Writer) Adopt(ctx context.Context, objs []v1beta1.ServiceL2Status) error {
	copies := make([]*v1beta1.ServiceL2Status, len(objs))
	for i := range objs {
		copies[i] = objs[i].DeepCopy()
	}
	return w.held.Adopt(ctx, w.client, copies)
}

// Held returns the addresses this node's object for svc lists; ok is false
// when there is no object. An adopted object that lists none (MetalLB's)
// returns no addresses and ok.
func (w *Writer) Held(svc types.NamespacedName) (addrs []netip.Addr, ok bool) {
	st := w.get(svc)
	if st == nil {
		return nil, false
	}
	addrs, _ = Addresses(st)
	return addrs, true
}

// Lost tells the Writer that an object of this node was deleted, by
// whoever: when it is the one held for its Service, the Writer forgets it,
// so the next Report creates a new one, and Lost returns that Service.
func (w *Writer) Lost(st *v1beta1.ServiceL2Status) (svc types.NamespacedName, forgotten bool) {
	return w.held.Lost(st)
}

// Services are the Services this node holds an object for, sorted.
func (w *Writer) Services() []types.NamespacedName { return w.held.Services() }

// claim is Report's first half: this node's object for svc exists and its
// labels, owner reference and address annotation are current. It creates
// the object, or patches it once, and creates it again when the patch finds
// it deleted by someone else. The node does not wait for it to answer: the
// speaker writes its objects in the background, after it starts answering.
// It returns the object as written: the one held may be forgotten
// meanwhile (Lost, from the cache's delete event of an object another node
// removed), and the caller goes on with what it wrote.
func (w *Writer) claim(ctx context.Context, svc types.NamespacedName, addrs []netip.Addr) (*v1beta1.ServiceL2Status, error) {
	cur := w.get(svc)
	if cur == nil {
		return w.create(ctx, svc, addrs)
	}
	next := cur.DeepCopy()
	w.setMeta(next, svc, addrs)
	if equality.Semantic.DeepEqual(cur.ObjectMeta, next.ObjectMeta) {
		return cur, nil
	}
	err := w.client.Patch(ctx, next, client.MergeFrom(cur))
	if apierrors.IsNotFound(err) {
		// Deleted by someone else (a node that took over while this one
		// was out of the membership, or the garbage collector).
		w.forget(svc)
		return w.create(ctx, svc, addrs)
	}
	if err != nil {
		return nil, fmt.Errorf("update ServiceL2Status %s/%s of service %s: %w", cur.Namespace, cur.Name, svc, err)
	}
	w.put(svc, next)
	return next, nil
}

// Report brings this node's object for svc in line with what the node
// answers: the addresses and the interfaces that answer for them. It
// creates the object if there is none; up to two writes.
func (w *Writer) Report(ctx context.Context, svc types.NamespacedName, addrs []netip.Addr, interfaces []string) error {
	return w.report(ctx, svc, addrs, interfaces, true)
}

// report is Report; retry allows one more round after the object turned
// out to be gone or unusable.
func (w *Writer) report(ctx context.Context, svc types.NamespacedName, addrs []netip.Addr, interfaces []string, retry bool) error {
	cur, err := w.claim(ctx, svc, addrs)
	if err != nil {
		return err
	}
	want := w.status(svc, interfaces)
	if equality.Semantic.DeepEqual(cur.Status, want) {
		return nil
	}
	next := cur.DeepCopy()
	next.Status = want
	err = w.client.Status().Patch(ctx, next, client.MergeFrom(cur))
	switch {
	case retry && apierrors.IsNotFound(err):
		w.forget(svc)
		return w.report(ctx, svc, addrs, interfaces, false)
	case retry && apierrors.IsInvalid(err):
		// An adopted object whose immutable fields name someone else:
		// replace it rather than keep a wrong record.
		if err := w.Release(ctx, svc); err != nil {
			return err
		}
		return w.report(ctx, svc, addrs, interfaces, false)
	case err != nil:
		return fmt.Errorf("update status of ServiceL2Status %s/%s of service %s: %w", cur.Namespace, cur.Name, svc, err)
	}
	w.put(svc, next)
	return nil
}

// Release deletes this node's object for svc, if it holds one: the last
// step of stopping, after the node no longer answers.
func (w *Writer) Release(ctx context.Context, svc types.NamespacedName) error {
	cur := w.get(svc)
	if cur == nil {
		return nil
	}
	if err := DeleteObject(ctx, w.client, cur); err != nil {
		return fmt.Errorf("release service %s: %w", svc, err)
	}
	w.forget(svc)
	return nil
}

// DeleteObject deletes one object, the very one given (by UID), and
// succeeds when it is gone already.
func DeleteObject(ctx context.Context, c client.Client, st *v1beta1.ServiceL2Status) error {
	return statusobj.Delete(ctx, c, st)
}

func (w *Writer) create(ctx context.Context, svc types.NamespacedName, addrs []netip.Addr) (*v1beta1.ServiceL2Status, error) {
	st := &v1beta1.ServiceL2Status{ObjectMeta: metav1.ObjectMeta{GenerateName: NamePrefix, Namespace: w.opts.Namespace}}
	w.setMeta(st, svc, addrs)
	if err := w.client.Create(ctx, st); err != nil {
		return nil, fmt.Errorf("create ServiceL2Status for service %s: %w", svc, err)
	}
	w.put(svc, st)
	return st, nil
}

// setMeta sets what identifies the object and what it guards.
func (w *Writer) setMeta(st *v1beta1.ServiceL2Status, svc types.NamespacedName, addrs []netip.Addr) {
	if st.Labels == nil {
		st.Labels = map[string]string{}
	}
	st.Labels[v1beta1.LabelNode] = w.opts.Node
	st.Labels[v1beta1.LabelServiceName] = svc.Name
	st.Labels[v1beta1.LabelServiceNamespace] = svc.Namespace
	if st.Annotations == nil {
		st.Annotations = map[string]string{}
	}
	st.Annotations[AnnotationAddresses] = formatAddresses(sortedAddrs(addrs))
	w.mu.Lock()
	owner := w.opts.Owner
	w.mu.Unlock()
	if owner != nil {
		st.OwnerReferences = []metav1.OwnerReference{*owner}
	}
}

func (w *Writer) status(svc types.NamespacedName, interfaces []string) v1beta1.MetalLBServiceL2Status {
	s := v1beta1.MetalLBServiceL2Status{Node: w.opts.Node, ServiceName: svc.Name, ServiceNamespace: svc.Namespace}
	names := slices.Clone(interfaces)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		s.Interfaces = append(s.Interfaces, v1beta1.InterfaceInfo{Name: n})
	}
	return s
}

func sortedAddrs(addrs []netip.Addr) []netip.Addr {
	out := slices.Clone(addrs)
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

func (w *Writer) get(svc types.NamespacedName) *v1beta1.ServiceL2Status {
	st, _ := w.held.Get(svc)
	return st
}

func (w *Writer) put(svc types.NamespacedName, st *v1beta1.ServiceL2Status) { w.held.Put(svc, st) }

func (w *Writer) forget(svc types.NamespacedName) { w.held.Forget(svc) }
