package assign

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/steadylb/steadylb/internal/ipam"
)

// AnnotationAllocation is steadylb's own record of an assignment, written
// in the same request as the status: the addresses and, for a Service that
// shares them, the sharing terms they are held under (key, backend,
// ports).
//
// Why a record: whether a Service may keep an address it shares depends on
// the terms it was given the address under, not on what its spec asks for
// now. When the request changes while the controller is down, a restart
// must judge the change exactly as the running controller would have: the
// holder is restored under its recorded terms, and only then is its new
// request judged (it may move; the others sharing the address never do).
// Without a record (an assignment MetalLB made, say) the terms are read
// from the current spec.
const AnnotationAllocation = "steadylb.io/allocation"

// record is the JSON form of AnnotationAllocation.
type record struct {
	IPs []string `json:"ips"`
	// Sharing terms, only for a Service with an allow-shared-ip key: an
	// address nobody shares cannot clash with anyone.
	Sharing string   `json:"sharing,omitempty"`
	Backend string   `json:"backend,omitempty"`
	Ports   []string `json:"ports,omitempty"`
}

// renderRecord returns the annotation value for an assignment under req,
// or "" when there is nothing to record.
func renderRecord(addrs []netip.Addr, sharing ipam.SharingKey, ports []ipam.Port) string {
	if len(addrs) == 0 {
		return ""
	}
	if sharing.Sharing == "" {
		// What json.Marshal writes for addresses alone (their characters
		// need no escaping), without reflection: every assignment and
		// every decision of a restart renders one.
		var b strings.Builder
		b.WriteString(`{"ips":[`)
		for i, a := range addrs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('"')
			b.WriteString(a.String())
			b.WriteByte('"')
		}
		b.WriteString(`]}`)
		return b.String()
	}
	r := record{}
	for _, a := range addrs {
		r.IPs = append(r.IPs, a.String())
	}
	if sharing.Sharing != "" {
		r.Sharing, r.Backend = sharing.Sharing, sharing.Backend
		sorted := slices.Clone(ports)
		slices.SortFunc(sorted, func(x, y ipam.Port) int {
			return strings.Compare(x.String(), y.String())
		})
		for _, p := range slices.Compact(sorted) {
			r.Ports = append(r.Ports, p.String())
		}
	}
	out, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("marshal allocation record: %v", err)) // plain strings cannot fail
	}
	return string(out)
}

// terms are the sharing terms an assignment was recorded under.
type terms struct {
	addrs   []netip.Addr // sorted
	sharing ipam.SharingKey
	ports   []ipam.Port
}

// ParseRecord reads an AnnotationAllocation value. Errors name what is
// wrong; a bad record is ignored by the caller, never fatal.
func ParseRecord(value string) (terms, error) {
	if t, ok := parsePlainRecord(value); ok {
		return t, nil
	}
	return decodeRecord(value)
}

// decodeRecord is ParseRecord with a JSON decoder, for every form.
func decodeRecord(value string) (terms, error) {
	var r record
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return terms{}, fmt.Errorf("annotation %s is not valid: %w", AnnotationAllocation, err)
	}
	if dec.More() {
		return terms{}, fmt.Errorf("annotation %s has data after the record", AnnotationAllocation)
	}
	t := terms{sharing: ipam.SharingKey{Sharing: r.Sharing, Backend: r.Backend}}
	for _, s := range r.IPs {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return terms{}, fmt.Errorf("annotation %s: %q is not an IP address", AnnotationAllocation, s)
		}
		t.addrs = append(t.addrs, a.Unmap())
	}
	slices.SortFunc(t.addrs, netip.Addr.Compare)
	for _, s := range r.Ports {
		p, err := parsePort(s)
		if err != nil {
			return terms{}, fmt.Errorf("annotation %s: %w", AnnotationAllocation, err)
		}
		t.ports = append(t.ports, p)
	}
	return t, nil
}

// parsePlainRecord reads the form the controller writes for a Service that
// shares nothing, {"ips":["a"]} or {"ips":["a","b"]}, without a JSON
// decoder: a restart reads one record per Service. Anything else (escapes,
// spaces, sharing terms) is left to the decoder, so both read every value
// alike.
func parsePlainRecord(value string) (terms, bool) {
	const open, sep, end = `{"ips":["`, `","`, `"]}`
	inner, ok := strings.CutPrefix(value, open)
	if !ok {
		return terms{}, false
	}
	if inner, ok = strings.CutSuffix(inner, end); !ok || strings.ContainsRune(inner, '\\') {
		return terms{}, false
	}
	var t terms
	for s := range strings.SplitSeq(inner, sep) {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return terms{}, false // the decoder words the error
		}
		t.addrs = append(t.addrs, a.Unmap())
	}
	slices.SortFunc(t.addrs, netip.Addr.Compare)
	return t, true
}

func parsePort(s string) (ipam.Port, error) {
	proto, num, ok := strings.Cut(s, "/")
	n, err := strconv.ParseInt(num, 10, 32)
	if !ok || err != nil || n < 0 || n > 65535 || proto == "" {
		return ipam.Port{}, fmt.Errorf("port %q is not PROTOCOL/NUMBER", s)
	}
	return ipam.Port{Protocol: proto, Port: int32(n)}, nil
}

// recordedTerms returns the terms a Service's addresses are recorded
// under, if its record is valid and names exactly what its status shows.
func recordedTerms(svc *corev1.Service) (terms, bool) {
	value, ok := svc.Annotations[AnnotationAllocation]
	if !ok {
		return terms{}, false
	}
	t, err := ParseRecord(value)
	if err != nil || !showsExactly(svc, t.addrs) {
		return terms{}, false
	}
	return t, true
}
