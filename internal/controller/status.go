package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/ipam"
)

// apply writes a decision in one request: a merge patch to the status
// subresource that carries the status (addresses, condition) and our two
// annotations. kube-apiserver keeps metadata changes made through a
// Service's /status, so this is the single write an assignment needs; an
// API server that drops them is detected from the object it returns, and
// then the annotations follow in a second patch. A failed write leaves the
// book as the API server shows the Service (invariant 6): what the
// decision gave up stays reserved until the write is confirmed.
func (r *ServiceReconciler) apply(ctx context.Context, svc *corev1.Service, d assign.Decision, begin time.Time) error {
	p := servicePatch{}
	want := patchStatus{LoadBalancer: patchLoadBalancer{Ingress: ingress(svc.Status.LoadBalancer.Ingress, d.Addrs, d.IPMode)},
		Conditions: slices.Clone(svc.Status.Conditions)}
	d.Condition.ObservedGeneration = svc.Generation
	meta.SetStatusCondition(&want.Conditions, d.Condition)
	statusChanged := !equality.Semantic.DeepEqual(svc.Status.LoadBalancer.Ingress, want.LoadBalancer.Ingress) ||
		!equality.Semantic.DeepEqual(svc.Status.Conditions, want.Conditions)
	if statusChanged {
		p.Status = &want
	}
	p.annotate(svc, assign.AnnotationAllocatedFromPool, d.Pool)
	p.annotate(svc, assign.AnnotationAllocation, d.Record)
	if p.empty() {
		// What the Service shows is the decision, so nothing it gave up
		// is shown any more.
		r.settle(assign.Key(svc))
		return nil
	}
	written, err := p.send(ctx, r.Client, svc)
	if err != nil {
		r.afterFailedWrite(ctx, svc)
		return fmt.Errorf("write status of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if statusChanged {
		recordWrite(ctx, svc, d, begin)
	}
	r.settle(assign.Key(svc))
	r.poolsChanged()
	if intended := (ourAnnotationValues{d.Pool, d.Record}); ourAnnotations(written) != intended {
		if err := r.patchAnnotations(ctx, written, intended); err != nil {
			return err
		}
	}
	for _, e := range d.Events {
		kind := corev1.EventTypeNormal
		if e.Warning {
			kind = corev1.EventTypeWarning
		}
		r.Events.Eventf(svc, nil, kind, e.Reason, "Allocate", "%s", e.Note)
	}
	return nil
}

// settle frees what a Service gave up once the API server no longer shows
// it, and wakes the Services waiting for room.
func (r *ServiceReconciler) settle(k ipam.ServiceKey) {
	r.alloc.Lock()
	freed := r.alloc.Book().Settle(k)
	r.alloc.Freed(freed)
	r.unlock()
	if len(freed) > 0 {
		r.wakeWaiting()
	}
}

// ourAnnotationValues are the values of the annotations the controller
// writes.
type ourAnnotationValues struct{ pool, record string }

func ourAnnotations(svc *corev1.Service) ourAnnotationValues {
	return ourAnnotationValues{svc.Annotations[assign.AnnotationAllocatedFromPool], svc.Annotations[assign.AnnotationAllocation]}
}

// afterFailedWrite reads the Service from the API server, so the book
// follows what the API server holds whether or not the write landed. If
// that read fails too, the book keeps both what the Service held and what
// it was given, until a later reconcile can tell.
func (r *ServiceReconciler) afterFailedWrite(ctx context.Context, svc *corev1.Service) {
	nsLabels, err := r.namespaceLabels(ctx, svc.Namespace)
	if err == nil {
		_, err = r.confirm(ctx, svc, nsLabels)
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "resync after a failed write", "service", client.ObjectKeyFromObject(svc))
	}
}

// patchAnnotations is the fallback for an API server that does not keep
// metadata written through /status: the annotations in a second patch.
func (r *ServiceReconciler) patchAnnotations(ctx context.Context, svc *corev1.Service, want ourAnnotationValues) error {
	log.FromContext(ctx).V(1).Info("the API server dropped annotations written with the status; patching them separately",
		"service", client.ObjectKeyFromObject(svc))
	p := servicePatch{}
	p.annotate(svc, assign.AnnotationAllocatedFromPool, want.pool)
	p.annotate(svc, assign.AnnotationAllocation, want.record)
	patch, err := p.encode(svc)
	if err != nil {
		return err
	}
	written := svc.ResourceVersion
	if err := r.Client.Patch(ctx, svc, patch); err != nil {
		return fmt.Errorf("write annotations %s and %s on service %s/%s: %w",
			assign.AnnotationAllocatedFromPool, assign.AnnotationAllocation, svc.Namespace, svc.Name, err)
	}
	if svc.ResourceVersion != written {
		// A cached copy at the status write's version lacks the
		// annotations; serving it would patch again. The patch's event
		// follows.
		r.ownWrites.record(assign.Key(svc), written)
	}
	return nil
}

func recordWrite(ctx context.Context, svc *corev1.Service, d assign.Decision, begin time.Time) {
	servicesWritten.Inc()
	old := assign.StatusAddresses(svc)
	if len(old) > 0 && !sameAddrs(old, d.Addrs) {
		addressesMoved.Inc()
	}
	if len(d.Addrs) > 0 && !sameAddrs(old, d.Addrs) {
		allocationDuration.Observe(time.Since(begin).Seconds())
	}
	log.FromContext(ctx).Info("wrote service status", "service", client.ObjectKeyFromObject(svc),
		"addresses", d.Addrs, "reason", d.Condition.Reason)
}
