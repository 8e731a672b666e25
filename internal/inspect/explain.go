package inspect

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/assign"
	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// PoolVerdict says what one pool meant for one Service.
type PoolVerdict struct {
	Pool    string `json:"pool"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
	// families are those the Service wants that the pool could serve.
	families []ipam.Family
}

// What a pool meant for a Service.
const (
	VerdictChosen   = "chosen"   // its address comes from there
	VerdictRejected = "rejected" // the pool may not serve it
	VerdictNoRoom   = "no room"  // it may, but has nothing left for it
	VerdictUnused   = "unused"   // it may, but another pool came first
)

// Condition is a Service's steadylb.io/AddressAssigned condition.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Explanation is why a Service has its addresses or has none.
type Explanation struct {
	Service string `json:"service"`
	// Shown are the addresses its status shows; Addresses those the
	// controller decides on the current objects, from Pool.
	Shown     []string `json:"shown"`
	Addresses []string `json:"addresses"`
	Pool      string   `json:"pool,omitempty"`
	// Decision is the condition the controller would write; Recorded the
	// one the Service carries (nil when it has none).
	Decision Condition  `json:"decision"`
	Recorded *Condition `json:"recorded"`
	// Agrees is false when Recorded says otherwise than Decision;
	// Disagreement then says how.
	Agrees       bool   `json:"agrees"`
	Disagreement string `json:"disagreement,omitempty"`
	// Origin says where the addresses came back from, when they were
	// kept for the Service: an AddressReservation or its allocation
	// record.
	Origin string `json:"origin,omitempty"`
	// Reservations say, for each AddressReservation naming the Service,
	// whether it holds the addresses and why not.
	Reservations []string      `json:"reservations,omitempty"`
	Request      []string      `json:"request"`
	Refused      []string      `json:"refused,omitempty"`
	Pools        []PoolVerdict `json:"pools"`
	// Warnings are the controller's warning events other than the
	// allocation failure itself (a deprecated annotation, too few
	// ClusterIPs).
	Warnings []string `json:"warnings,omitempty"`
	Hint     string   `json:"hint,omitempty"`
}

// ErrUnknownService is returned for a Service that does not exist.
var ErrUnknownService = errors.New("no such service")

// ErrNotOurs is returned for a Service the controller does not serve.
var ErrNotOurs = errors.New("not served by steadylb")

// Explain says why a Service has its addresses or none. It reads the
// Service's decision (KeepService).
func (s *State) Explain(k ipam.ServiceKey) (Explanation, error) {
	v, ok := s.Replayed.Verdict(k)
	if !ok {
		return Explanation{}, s.notExplainable(k)
	}
	e := Explanation{Service: k.String(), Shown: addrStrings(v.Shown), Addresses: addrStrings(v.Addrs),
		Decision: Condition{Status: string(v.Condition.Status), Reason: v.Condition.Reason, Message: v.Condition.Message},
		Request:  describeRequest(v), Pools: s.considerPools(v), Hint: hints[v.Condition.Reason]}
	if len(v.Addrs) > 0 {
		e.Pool = v.Pool
	}
	e.Origin, e.Reservations = s.origin(v), s.reservationsFor(v)
	for _, ev := range v.Events {
		// The reservation lines carry ReservationNotUsable.
		if ev.Warning && ev.Reason != assign.EventAllocationFailed && ev.Reason != assign.EventReservationNotUsable {
			e.Warnings = append(e.Warnings, ev.Note)
		}
	}
	for _, c := range v.Refused {
		e.Refused = append(e.Refused, fmt.Sprintf("%s: %v", c.Addr, c.Err))
	}
	if c := meta.FindStatusCondition(v.Object.Status.Conditions, assign.ConditionAddressAssigned); c != nil {
		e.Recorded = &Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	}
	e.Agrees, e.Disagreement = agreement(e)
	return e, nil
}

func (s *State) notExplainable(k ipam.ServiceKey) error {
	for i := range s.Cluster.Services {
		svc := &s.Cluster.Services[i]
		if svc.Namespace != k.Namespace || svc.Name != k.Name {
			continue
		}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return fmt.Errorf("%w: service %s is of type %s, not LoadBalancer", ErrNotOurs, k, svc.Spec.Type)
		}
		class := "none"
		if svc.Spec.LoadBalancerClass != nil {
			class = *svc.Spec.LoadBalancerClass
		}
		return fmt.Errorf("%w: service %s has loadBalancerClass %s; the controller serves %s", ErrNotOurs, k, class,
			classPhrase(s.Cluster.LBClass))
	}
	return fmt.Errorf("%w: %s (the namespace comes from -n or the kubeconfig)", ErrUnknownService, k)
}

func classPhrase(lbClass string) string {
	if lbClass == "" {
		return "Services without a loadBalancerClass (set --lb-class as the controller's)"
	}
	return "loadBalancerClass " + lbClass
}

// agreement compares the controller's recorded condition with the replayed
// decision.
func agreement(e Explanation) (bool, string) {
	switch r := e.Recorded; {
	case r == nil:
		return false, "the Service has no " + assign.ConditionAddressAssigned +
			" condition: the controller has not served it yet (is it running, with the same --lb-class?)"
	case r.Reason != e.Decision.Reason || r.Status != e.Decision.Status:
		return false, fmt.Sprintf("the Service's condition says %s (%s) but the current objects give %s: "+
			"they changed since the controller wrote it, or the controller is not running", r.Reason, r.Message, e.Decision.Reason)
	case !slices.Equal(e.Shown, e.Addresses):
		return false, fmt.Sprintf("the Service shows %s but the current objects give %s", joinOr(e.Shown), joinOr(e.Addresses))
	}
	return true, ""
}

// hints say what the user could change, per reason.
var hints = map[string]string{
	assign.ReasonPoolExhausted: "free an address in a pool marked \"no room\", add a range to one, or let " +
		"Services share an address (the same metallb.io/allow-shared-ip key, ports that do not overlap)",
	assign.ReasonPoolExhaustedByReservations: "delete an AddressReservation that keeps addresses in a pool marked " +
		"\"no room\" (kubectl get addressreservations -A; a retained-<service> one ends by itself at its expiresAt), " +
		"add a range to one, or let Services share an address",
	assign.ReasonRequestedIPInUse: "request another address, or give both Services the same " +
		"metallb.io/allow-shared-ip key with ports that do not overlap",
	assign.ReasonNoMatchingPool: "create a pool that admits the Service, or change a pool's serviceAllocation, " +
		"the Service's labels or namespace, or its requested address or pool",
	assign.ReasonInvalidRequest: "fix the annotation or field the message names",
}

func describeRequest(v assign.Verdict) []string {
	r := v.Request()
	out := []string{"families: " + r.Policy.String() + ", primary " + r.Primary.String()}
	if len(r.RequestedIPs) > 0 {
		out = append(out, "requested addresses: "+strings.Join(addrStrings(r.RequestedIPs), ","))
	}
	if r.Pool != "" {
		out = append(out, "pool: "+r.Pool)
	}
	if r.Sharing.Sharing != "" {
		out = append(out, "sharing key: "+r.Sharing.Sharing)
	}
	if v.RequestErr != nil {
		out = append(out, "cannot be read: "+v.RequestErr.Error())
	}
	return out
}

// considerPools says, for every pool by name, what it meant for the
// Service. It explains the decision the controller took (controller.
// Replay), using the same config model and book; it decides nothing.
func (s *State) considerPools(v assign.Verdict) []PoolVerdict {
	var out []PoolVerdict
	for _, p := range s.Replayed.Config.Pools() {
		pv := PoolVerdict{Pool: p.Name()}
		pv.Verdict, pv.Why, pv.families = s.judgePool(v, p)
		out = append(out, pv)
	}
	return out
}

func (s *State) judgePool(v assign.Verdict, p *config.Pool) (string, string, []ipam.Family) {
	r, name := v.Request(), p.Name()
	inPool := slices.ContainsFunc(r.RequestedIPs, p.Contains)
	switch {
	case len(v.Addrs) > 0 && v.Pool == name:
		return VerdictChosen, "assigned " + strings.Join(addrStrings(v.Addrs), ","), nil
	case r.Pool != "" && r.Pool != name:
		return VerdictRejected, fmt.Sprintf("the address-pool annotation names pool %q", r.Pool), nil
	case len(r.RequestedIPs) > 0 && !inPool:
		return VerdictRejected, "does not contain the requested " + strings.Join(addrStrings(r.RequestedIPs), ","), nil
	case !p.AdmitsNamespace(v.Service.Namespace, s.namespaceLabels(v.Service.Namespace)):
		return VerdictRejected, "serviceAllocation does not admit namespace " + v.Service.Namespace, nil
	case !p.AdmitsService(labels.Set(v.Object.Labels)):
		return VerdictRejected, "serviceAllocation.serviceSelectors do not match the Service's labels", nil
	case r.Pool == "" && len(r.RequestedIPs) == 0 && !p.AutoAssign():
		return VerdictRejected, "autoAssign is false: ask for it with the metallb.io/address-pool annotation", nil
	}
	fams, missing := servedFamilies(r, p)
	if missing != "" {
		return VerdictRejected, missing, nil
	}
	if why := s.requestedHeld(v, p); why != "" {
		return VerdictNoRoom, why, fams
	}
	if why := s.noRoom(p, r.Policy, fams); why != "" {
		return VerdictNoRoom, why, fams
	}
	return VerdictUnused, "admits the Service; " + priorityPhrase(p), fams
}

// servedFamilies returns the families of the request the pool can serve,
// or why it serves none the request needs.
func servedFamilies(r ipam.Request, p *config.Pool) ([]ipam.Family, string) {
	has := map[ipam.Family]bool{ipam.IPv4: p.HasIPv4(), ipam.IPv6: p.HasIPv6()}
	var wanted []ipam.Family
	switch r.Policy {
	case ipam.SingleStack:
		wanted = []ipam.Family{r.Primary}
	default:
		wanted = []ipam.Family{ipam.IPv4, ipam.IPv6}
	}
	var served, lacking []ipam.Family
	for _, f := range wanted {
		if has[f] {
			served = append(served, f)
		} else {
			lacking = append(lacking, f)
		}
	}
	if len(served) == 0 || (r.Policy == ipam.RequireDualStack && len(lacking) > 0) {
		return nil, fmt.Sprintf("has no %s addresses", lacking[0])
	}
	return served, ""
}

// requestedHeld names who holds the requested addresses of the pool.
func (s *State) requestedHeld(v assign.Verdict, p *config.Pool) string {
	var held []string
	for _, a := range v.Request().RequestedIPs {
		if !p.Contains(a) {
			continue
		}
		others := slices.DeleteFunc(s.Replayed.Book.Holders(a), func(k ipam.ServiceKey) bool { return k == v.Service })
		if len(others) > 0 {
			held = append(held, fmt.Sprintf("requested %s is held by %s", a, holderNames(others)))
		}
	}
	return strings.Join(held, "; ")
}

// noRoom says why the pool has no room for the families, or "" when it
// has: one free family is enough unless both are required.
func (s *State) noRoom(p *config.Pool, policy ipam.FamilyPolicy, fams []ipam.Family) string {
	st, _ := s.Replayed.Book.Stats(p.Name())
	var full []string
	for _, f := range fams {
		fs := st.IPv4
		if f == ipam.IPv6 {
			fs = st.IPv6
		}
		if fs.Available.IsZero() {
			full = append(full, fmt.Sprintf("no free %s address (%s)", f, s.takenBy(p.Name(), f, fs)))
		}
	}
	if len(full) == 0 || (len(full) < len(fams) && policy != ipam.RequireDualStack) {
		return ""
	}
	return strings.Join(full, "; ")
}

func priorityPhrase(p *config.Pool) string {
	sa := p.ServiceAllocation()
	switch {
	case sa == nil:
		return "pools with serviceAllocation are tried first, then this one by name"
	case sa.Priority() > 0:
		return fmt.Sprintf("tried at priority %d", sa.Priority())
	}
	return "tried after the pools with a positive priority"
}
