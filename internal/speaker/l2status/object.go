package l2status

import (
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/internal/speaker/statusobj"
)

// AnnotationAddresses lists, comma-separated, the addresses the object's
// node answers for on behalf of its Service.
const AnnotationAddresses = "steadylb.io/addresses"

// NamePrefix is the generateName of every object, MetalLB's.
const NamePrefix = "l2-"

// ServiceOf returns the Service an object reports on, from its labels.
func ServiceOf(st *v1beta1.ServiceL2Status) (types.NamespacedName, bool) {
	return statusobj.ServiceOf(st)
}

// NodeOf returns the node an object reports for: its label, or status.node
// for an object that lost the label.
func NodeOf(st *v1beta1.ServiceL2Status) string { return statusobj.NodeOf(st, st.Status.Node) }

// Addresses returns the addresses an object guards. ok is false when it
// does not say (no annotation, or one that does not parse): the object then
// guards every address of its Service.
func Addresses(st *v1beta1.ServiceL2Status) (addrs []netip.Addr, ok bool) {
	v, found := st.Annotations[AnnotationAddresses]
	if !found {
		return nil, false
	}
	return parseAddresses(v)
}

func parseAddresses(v string) ([]netip.Addr, bool) {
	if v == "" {
		return nil, true
	}
	var out []netip.Addr
	for _, part := range strings.Split(v, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(part))
		if err != nil {
			return nil, false
		}
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), true
}

func formatAddresses(addrs []netip.Addr) string {
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a.String()
	}
	return strings.Join(parts, ",")
}

// indexAddresses is the field index of the addresses an object guards. An
// object that does not say is indexed under none of them; readers find it
// through its Service.
func indexAddresses(st *v1beta1.ServiceL2Status) []string {
	addrs, ok := Addresses(st)
	if !ok {
		return nil
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
