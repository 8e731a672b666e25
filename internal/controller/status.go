package controller

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// apply writes a decision: status first (the assignment itself), then the
// pool annotation, then the events. A failed status write leaves the book
// as the API server shows the Service (invariant 6).
func (r *ServiceReconciler) apply(ctx context.Context, svc *corev1.Service, d decision, begin time.Time) error {
	want := svc.DeepCopy()
	want.Status.LoadBalancer.Ingress = ingress(svc.Status.LoadBalancer.Ingress, d.addrs)
	d.condition.ObservedGeneration = svc.Generation
	meta.SetStatusCondition(&want.Status.Conditions, d.condition)
	if equality.Semantic.DeepEqual(svc.Status, want.Status) && svc.Annotations[AnnotationAllocatedFromPool] == d.pool {
		return nil
	}
	if !equality.Semantic.DeepEqual(svc.Status, want.Status) {
		if err := r.Client.Status().Update(ctx, want); err != nil {
			r.afterFailedWrite(ctx, svc)
			return fmt.Errorf("write status of service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		recordWrite(ctx, svc, d, begin)
		r.poolsChanged()
		if len(d.addrs) < len(statusAddresses(svc)) {
			r.roomFreed()
		}
	}
	if want.Annotations[AnnotationAllocatedFromPool] != d.pool {
		written := want.ResourceVersion
		if err := r.writePoolAnnotation(ctx, want, d.pool); err != nil {
			return err
		}
		if want.ResourceVersion != written {
			// A cached copy at the version before the patch (our status
			// write's, or the one we decided on) lacks the annotation;
			// serving it would patch again. The patch's event follows.
			r.ownWrites.record(key(svc), written)
		}
	}
	for _, e := range d.events {
		kind := corev1.EventTypeNormal
		if e.warning {
			kind = corev1.EventTypeWarning
		}
		r.Events.Eventf(svc, nil, kind, e.reason, "Allocate", "%s", e.note)
	}
	return nil
}

// afterFailedWrite reads the Service from the API server, so the book
// follows what the API server holds whether or not the write landed.
func (r *ServiceReconciler) afterFailedWrite(ctx context.Context, svc *corev1.Service) {
	nsLabels, err := r.namespaceLabels(ctx, svc.Namespace)
	if err == nil {
		_, err = r.confirm(ctx, svc, nsLabels)
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "resync after a failed write", "service", client.ObjectKeyFromObject(svc))
	}
}

func (r *ServiceReconciler) writePoolAnnotation(ctx context.Context, svc *corev1.Service, pool string) error {
	base := svc.DeepCopy()
	if pool == "" {
		delete(svc.Annotations, AnnotationAllocatedFromPool)
	} else {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[AnnotationAllocatedFromPool] = pool
	}
	if err := r.Client.Patch(ctx, svc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("write annotation %s on service %s/%s: %w", AnnotationAllocatedFromPool, svc.Namespace, svc.Name, err)
	}
	return nil
}

// ingress renders addresses as status.loadBalancer.ingress, keeping any
// fields (ipMode, ports) already there for an address that stays.
func ingress(current []corev1.LoadBalancerIngress, addrs []netip.Addr) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	for _, a := range addrs {
		entry := corev1.LoadBalancerIngress{IP: a.String()}
		for _, c := range current {
			if c.IP == entry.IP {
				entry = c
			}
		}
		out = append(out, entry)
	}
	return out
}

func recordWrite(ctx context.Context, svc *corev1.Service, d decision, begin time.Time) {
	servicesWritten.Inc()
	old := statusAddresses(svc)
	if len(old) > 0 && !sameAddrs(old, d.addrs) {
		addressesMoved.Inc()
	}
	if len(d.addrs) > 0 && !sameAddrs(old, d.addrs) {
		allocationDuration.Observe(time.Since(begin).Seconds())
	}
	log.FromContext(ctx).Info("wrote service status", "service", client.ObjectKeyFromObject(svc),
		"addresses", d.addrs, "reason", d.condition.Reason)
}
