package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadylb/steadylb/api/v1beta2"
)

// BGP session defaults, applied where a BGPPeer leaves a field unset.
const (
	DefaultBGPPort  = 179
	DefaultHoldTime = 90 * time.Second
)

// DynamicASNMode is the kind of peer AS a session accepts when the peer's AS
// number is not fixed.
type DynamicASNMode string

// The dynamic AS modes. DynamicASNNone means the peer AS is fixed (PeerASN).
const (
	DynamicASNNone     DynamicASNMode = ""
	DynamicASNInternal DynamicASNMode = "internal"
	DynamicASNExternal DynamicASNMode = "external"
)

// Peer is a validated BGPPeer with its defaults applied. It is immutable.
type Peer struct {
	name            string
	myASN           uint32
	peerASN         uint32
	dynamicASN      DynamicASNMode
	localASN        uint32
	address         netip.Addr
	iface           string
	source          netip.Addr
	port            uint16
	holdTime        time.Duration
	keepaliveTime   time.Duration
	connectTime     time.Duration
	routerID        netip.Addr
	nodeSelectors   []labels.Selector
	password        string
	bfdProfile      string
	gracefulRestart bool
	ebgpMultiHop    bool
	vrf             string
	disableMP       bool
	dualStack       bool
}

// Name is the peer's metadata.name.
func (p *Peer) Name() string { return p.name }

// MyASN is the AS number of the local end.
func (p *Peer) MyASN() uint32 { return p.myASN }

// PeerASN is the AS number expected from the peer; 0 when DynamicASN is set.
func (p *Peer) PeerASN() uint32 { return p.peerASN }

// DynamicASN is the kind of peer AS accepted; DynamicASNNone when PeerASN is
// fixed.
func (p *Peer) DynamicASN() DynamicASNMode { return p.dynamicASN }

// LocalASN is the AS number presented to the peer in place of MyASN; 0 when
// unset.
func (p *Peer) LocalASN() uint32 { return p.localASN }

// Address is the address to dial; invalid (IsValid false) for an unnumbered
// session, which has an Interface instead.
func (p *Peer) Address() netip.Addr { return p.address }

// Interface is the interface of an unnumbered session; empty when Address is
// set.
func (p *Peer) Interface() string { return p.iface }

// SourceAddress is the local address of the session; invalid when unset.
func (p *Peer) SourceAddress() netip.Addr { return p.source }

// Port is the TCP port to dial (default 179).
func (p *Peer) Port() uint16 { return p.port }

// HoldTime is the requested hold time (default 90s; 3 × keepaliveTime when
// only that is set, as MetalLB does). 0 turns keepalives off.
func (p *Peer) HoldTime() time.Duration { return p.holdTime }

// KeepaliveTime is the requested keepalive time (default HoldTime/3).
func (p *Peer) KeepaliveTime() time.Duration { return p.keepaliveTime }

// ConnectTime is the wait between connection attempts; 0 when unset, leaving
// it to the BGP implementation.
func (p *Peer) ConnectTime() time.Duration { return p.connectTime }

// RouterID is the BGP identifier to advertise, always IPv4; invalid when
// unset, leaving the choice to the speaker.
func (p *Peer) RouterID() netip.Addr { return p.routerID }

// NodeSelectors limit the nodes that open the session; empty means all.
func (p *Peer) NodeSelectors() []labels.Selector { return slices.Clone(p.nodeSelectors) }

// SelectsNode reports whether a node with these labels opens the session.
func (p *Peer) SelectsNode(nodeLabels labels.Set) bool {
	return matchesAny(p.nodeSelectors, nodeLabels)
}

// Password is the TCP MD5 password, written inline or read from the
// passwordSecret; empty for none.
func (p *Peer) Password() string { return p.password }

// BFDProfile names the BFDProfile guarding the session; empty for no BFD.
// The profile exists in the same Config.
func (p *Peer) BFDProfile() string { return p.bfdProfile }

// EnableGracefulRestart reports whether graceful restart is on.
func (p *Peer) EnableGracefulRestart() bool { return p.gracefulRestart }

// EBGPMultiHop reports whether the eBGP peer may be more than one hop away.
func (p *Peer) EBGPMultiHop() bool { return p.ebgpMultiHop }

// VRF is the host VRF of the session; empty for the default VRF.
func (p *Peer) VRF() string { return p.vrf }

// DisableMP reports the deprecated disableMP flag.
func (p *Peer) DisableMP() bool { return p.disableMP }

// DualStackAddressFamily reports whether both families share the session.
func (p *Peer) DualStackAddressFamily() bool { return p.dualStack }

// IsIBGP reports whether the session is internal: dynamicASN is "internal",
// or the peer AS equals the AS the session presents (LocalASN when set,
// since "local-as" is what the peer sees, else MyASN).
func (p *Peer) IsIBGP() bool {
	if p.dynamicASN != DynamicASNNone {
		return p.dynamicASN == DynamicASNInternal
	}
	return p.peerASN == p.sessionASN()
}

// asnKnown reports whether both ends' AS numbers read well enough to tell
// iBGP from eBGP.
func (p *Peer) asnKnown() bool {
	return p.myASN != 0 && (p.peerASN != 0 || p.dynamicASN != DynamicASNNone)
}

func (p *Peer) sessionASN() uint32 {
	if p.localASN != 0 {
		return p.localASN
	}
	return p.myASN
}

// describeIBGP says why the session is iBGP, for error messages.
func (p *Peer) describeIBGP() string {
	if p.dynamicASN != DynamicASNNone {
		return "dynamicASN is internal"
	}
	return fmt.Sprintf("peer AS %d equals local AS %d", p.peerASN, p.sessionASN())
}

// sessionKey names the neighbor a speaker opens a session to: one speaker
// cannot hold two sessions to one neighbor in one VRF, whatever the port.
func (p *Peer) sessionKey() string {
	if p.iface != "" {
		return fmt.Sprintf("interface %s (vrf %q)", p.iface, p.vrf)
	}
	return fmt.Sprintf("%s (vrf %q)", p.address, p.vrf)
}

// buildPeers validates every peer. peers are in age order: of two peers that
// would give one node two sessions to one neighbor, the newer is at fault.
func buildPeers(c *collector, peers []*v1beta2.BGPPeer, bfds *catalog[BFDProfile], secrets map[string]corev1.Secret) *catalog[Peer] {
	out := newCatalog[Peer]()
	var accepted []*Peer
	for _, in := range peers {
		out.present[in.Name] = true
		rep := c.object(KindBGPPeer, in.Name)
		p := buildPeer(rep, in, bfds, secrets)
		checkSessionUnique(rep, p, accepted)
		if rep.ok() {
			out.valid[p.name] = p
			accepted = append(accepted, p)
		}
	}
	return out
}

func buildPeer(rep *reporter, in *v1beta2.BGPPeer, bfds *catalog[BFDProfile], secrets map[string]corev1.Secret) *Peer {
	s := &in.Spec
	p := &Peer{
		name:            in.Name,
		myASN:           s.MyASN,
		localASN:        s.LocalASN,
		port:            s.Port,
		gracefulRestart: s.EnableGracefulRestart,
		ebgpMultiHop:    s.EBGPMultiHop,
		vrf:             s.VRFName,
		disableMP:       s.DisableMP,
		dualStack:       s.DualStackAddressFamily,
	}
	if p.port == 0 {
		p.port = DefaultBGPPort
	}
	if s.MyASN == 0 {
		rep.add(specPath.Child("myASN"), "must be set")
	}
	peerASN(rep, p, s)
	peerEndpoints(rep, p, s)
	p.holdTime, p.keepaliveTime = peerTimers(rep, s.HoldTime, s.KeepaliveTime)
	p.connectTime = connectTime(rep, s.ConnectTime)
	p.routerID = routerID(rep, s.RouterID)
	p.nodeSelectors = parseSelectors(rep, specPath.Child("nodeSelectors"), s.NodeSelectors)
	p.password = peerPassword(rep, s, secrets)
	peerBFD(rep, p, s.BFDProfile, bfds)
	if p.ebgpMultiHop && p.asnKnown() && p.IsIBGP() {
		rep.add(specPath.Child("ebgpMultiHop"), "not allowed for an iBGP session (%s)", p.describeIBGP())
	}
	noLineBreaks(rep, specPath.Child("vrf"), s.VRFName)
	return p
}

func peerASN(rep *reporter, p *Peer, s *v1beta2.BGPPeerSpec) {
	switch {
	case s.ASN != 0 && s.DynamicASN != "":
		rep.add(specPath.Child("dynamicASN"), "peerASN and dynamicASN are mutually exclusive")
	case s.ASN == 0 && s.DynamicASN == "":
		rep.add(specPath.Child("peerASN"), "one of peerASN and dynamicASN must be set")
	case s.DynamicASN != "" && s.DynamicASN != v1beta2.InternalASNMode && s.DynamicASN != v1beta2.ExternalASNMode:
		rep.add(specPath.Child("dynamicASN"), "unsupported value %q: must be %q or %q", s.DynamicASN, v1beta2.InternalASNMode, v1beta2.ExternalASNMode)
	default:
		p.peerASN, p.dynamicASN = s.ASN, DynamicASNMode(s.DynamicASN)
	}
}

// peerEndpoints reads peerAddress or interface, and sourceAddress.
func peerEndpoints(rep *reporter, p *Peer, s *v1beta2.BGPPeerSpec) {
	switch {
	case s.Address != "" && s.Interface != "":
		rep.add(specPath.Child("interface"), "peerAddress and interface are mutually exclusive")
	case s.Address == "" && s.Interface == "":
		rep.add(specPath.Child("peerAddress"), "one of peerAddress and interface must be set")
	case s.Address != "":
		a, err := parseAddr(s.Address)
		if err != nil {
			rep.add(specPath.Child("peerAddress"), "%v", err)
		}
		p.address = a
	default:
		// The interface name ends up in the BGP daemon's configuration.
		if noLineBreaks(rep, specPath.Child("interface"), s.Interface) {
			p.iface = s.Interface
		}
	}
	if s.SrcAddress == "" {
		return
	}
	src, err := parseAddr(s.SrcAddress)
	if err != nil {
		rep.add(specPath.Child("sourceAddress"), "%v", err)
		return
	}
	if p.address.IsValid() && src.Is4() != p.address.Is4() {
		rep.add(specPath.Child("sourceAddress"), "%s and peerAddress %s are of different IP families", src, p.address)
	}
	p.source = src
}

// peerTimers applies MetalLB's defaults: with neither timer set, 90s and
// 30s; with one set, the other is derived at a ratio of 3. Then it checks
// RFC 4271's rules as the CRD states them: the hold time is 0 or at least
// 3s, and the keepalive time is shorter than the hold time (both 0 turns
// keepalives off).
func peerTimers(rep *reporter, hold, keepalive *metav1.Duration) (time.Duration, time.Duration) {
	holdPath, kaPath := specPath.Child("holdTime"), specPath.Child("keepaliveTime")
	var h, k time.Duration
	switch {
	case hold == nil && keepalive == nil:
		return DefaultHoldTime, DefaultHoldTime / 3
	case keepalive == nil:
		h = hold.Duration
		k = h / 3
	case hold == nil:
		k = keepalive.Duration
		h = 3 * k
		if h > 0 && h < 3*time.Second {
			rep.add(kaPath, "%v is too short: with holdTime unset it makes a holdTime of %v (3 × keepaliveTime), which must be 0 or at least 3s", k, h)
			return h, k
		}
	default:
		h, k = hold.Duration, keepalive.Duration
	}
	switch {
	case h < 0:
		rep.add(holdPath, "%v must not be negative", h)
	case k < 0:
		rep.add(kaPath, "%v must not be negative", k)
	case h > 0 && h < 3*time.Second:
		rep.add(holdPath, "%v must be 0 or at least 3s", h)
	case k >= h && !(k == 0 && h == 0):
		rep.add(kaPath, "%v must be shorter than holdTime (%v)", k, h)
	}
	return h, k
}

func connectTime(rep *reporter, d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	path := specPath.Child("connectTime")
	switch {
	case d.Duration < time.Second || d.Duration > 65535*time.Second:
		rep.add(path, "%v must be between 1s and 65535s", d.Duration)
	case d.Duration%time.Second != 0:
		rep.add(path, "%v must be a whole number of seconds", d.Duration)
	}
	return d.Duration
}

// routerID reads the BGP identifier, which RFC 4271 makes a 4-octet value:
// an IPv6 address cannot be one.
func routerID(rep *reporter, s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	a, err := parseAddr(s)
	switch {
	case err != nil:
		rep.add(specPath.Child("routerID"), "%v", err)
	case !a.Is4():
		rep.add(specPath.Child("routerID"), "%s is not an IPv4 address", a)
	}
	return a
}

// peerPassword returns the inline password or the one in passwordSecret.
// The Secret lives in the controller's namespace (secrets is keyed by name
// only); passwordSecret.namespace is not consulted, as in MetalLB.
func peerPassword(rep *reporter, s *v1beta2.BGPPeerSpec, secrets map[string]corev1.Secret) string {
	if s.Password != "" && s.PasswordSecret.Name != "" {
		rep.add(specPath.Child("passwordSecret"), "password and passwordSecret are mutually exclusive")
		return ""
	}
	if s.PasswordSecret.Name == "" {
		// The password ends up in the BGP daemon's configuration.
		noLineBreaks(rep, specPath.Child("password"), s.Password)
		return s.Password
	}
	path := specPath.Child("passwordSecret", "name")
	name := s.PasswordSecret.Name
	secret, ok := secrets[name]
	switch {
	case !ok:
		rep.add(path, "Secret %q does not exist", name)
	case secret.Type != corev1.SecretTypeBasicAuth:
		rep.add(path, "Secret %q is of type %q, want %q", name, secret.Type, corev1.SecretTypeBasicAuth)
	case secret.Data[corev1.BasicAuthPasswordKey] == nil:
		rep.add(path, "Secret %q has no %q key", name, corev1.BasicAuthPasswordKey)
	case strings.ContainsAny(string(secret.Data[corev1.BasicAuthPasswordKey]), "\r\n"):
		rep.add(path, "Secret %q: the password must not contain line breaks", name)
	default:
		return string(secret.Data[corev1.BasicAuthPasswordKey])
	}
	return ""
}

// peerBFD resolves the peer's BFD profile. Deleting a profile a peer uses is
// a webhook rule in MetalLB; here, where there is no webhook, it becomes an
// error on the peer that names the missing profile.
func peerBFD(rep *reporter, p *Peer, name string, bfds *catalog[BFDProfile]) {
	if name == "" {
		return
	}
	path := specPath.Child("bfdProfile")
	profile, err := bfds.lookup(KindBFDProfile, name)
	if err != nil {
		rep.add(path, "%v", err)
		return
	}
	// FRR's bfdd runs echo mode over IPv4 only. MetalLB refuses echo where a
	// profile meets IPv6 pools (see BGPAdvertisement); an IPv6 session is the
	// same mistake, caught where it is made.
	if profile.echoMode && p.address.Is6() {
		rep.add(path, "BFDProfile %q has echo mode on, which BFD does not support for the IPv6 peer %s", name, p.address)
		return
	}
	p.bfdProfile = name
}

// checkSessionUnique refuses a second session to one neighbor on one node:
// an earlier peer with the same address (or interface) and VRF whose
// nodeSelectors may select a node this one selects too. MetalLB's FRR mode
// refuses such pairs whatever their selectors; steadylb allows them when
// the selectors provably pick different nodes.
func checkSessionUnique(rep *reporter, p *Peer, earlier []*Peer) {
	if !p.address.IsValid() && p.iface == "" {
		return
	}
	path := specPath.Child("peerAddress")
	if p.iface != "" {
		path = specPath.Child("interface")
	}
	for _, q := range earlier {
		if q.sessionKey() == p.sessionKey() && mayOverlap(p.nodeSelectors, q.nodeSelectors) {
			rep.add(path, "BGPPeer %q already has a session to %s, and their nodeSelectors may select the same node", q.name, p.sessionKey())
			return
		}
	}
}

// noLineBreaks refuses a value that would break the line of the BGP
// daemon's configuration it is written into, as MetalLB does.
func noLineBreaks(rep *reporter, path *field.Path, s string) bool {
	if strings.ContainsAny(s, "\r\n") {
		rep.add(path, "must not contain line breaks")
		return false
	}
	return true
}
