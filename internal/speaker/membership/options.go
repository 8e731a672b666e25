package membership

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultBindPort is memberlist's usual port, and MetalLB's --ml-bindport
// default.
const DefaultBindPort = 7946

// The failure-detection tuning. doc.go explains the choice and derives the
// detection time and the traffic from these numbers; keep them in step.
const (
	probeInterval  = 100 * time.Millisecond
	probeTimeout   = 50 * time.Millisecond
	suspicionMult  = 2
	indirectChecks = 3
	gossipInterval = 50 * time.Millisecond
	gossipNodes    = 3
	retransmitMult = 4
	// pushPullInterval is memberlist's LAN default; it scales itself up
	// with the cluster size (x6 at 1,000 nodes).
	pushPullInterval = 30 * time.Second
	// tcpTimeout bounds a join or a push/pull with one peer. A LAN peer
	// that does not accept a TCP connection in 3s is not there.
	tcpTimeout = 3 * time.Second
	// deadRetention is how long a failed or departed node is still
	// gossiped to (a chance to refute) and still counted in the "dead" and
	// "left" gauges; memberlist forgets it after that.
	deadRetention = 30 * time.Second
)

// ErrInvalidOptions is wrapped by every error New returns for options it
// cannot use.
var ErrInvalidOptions = errors.New("invalid membership options")

// Options configure a Members. Only NodeName is required.
type Options struct {
	// NodeName is this member's name: the Kubernetes node name, since the
	// speakers match members against Node objects and endpoints by it.
	NodeName string
	// BindAddr is the address to listen on for UDP and TCP; default
	// "0.0.0.0". On a host-network speaker this is the node's address
	// (MetalLB's --ml-bindaddr, usually status.hostIP).
	BindAddr string
	// BindPort is the UDP and TCP port; default DefaultBindPort. A peer
	// given to Join as a bare host is contacted on this port too.
	BindPort int
	// AdvertiseAddr and AdvertisePort are what peers are told to use;
	// default the bind address (when it is a specific one) and BindPort.
	// With BindAddr "0.0.0.0" and no AdvertiseAddr, memberlist advertises
	// the first private address of the host, and fails if there is none.
	AdvertiseAddr string
	AdvertisePort int
	// SecretKey, when set, encrypts and authenticates every packet and
	// stream with AES-GCM; it must be 16, 24 or 32 bytes (AES-128/192/256).
	// Members with a different key, or none, cannot join. See
	// ReadSecretKey for a MetalLB memberlist Secret.
	SecretKey []byte
	// Registerer, when not nil, gets the membership metrics.
	Registerer prometheus.Registerer
	// OnDeclaredDead, when set, is called each time this member acts on
	// a declared-dead message, from the goroutine that received it and
	// before DeclaredDead signals: a caller that must go quiet at once
	// (the announcer) need not wait for its reader of the channel. It
	// must return quickly and not call back into Members.
	OnDeclaredDead func()
	// OnSuspected, when set, is called each time this member refutes a
	// suspicion of itself: a peer missed its acks, and it will be
	// declared dead unless the refutation gets there in time. A caller
	// that must never answer beside its replacement goes quiet for that
	// time. Called from memberlist's packet handler: it must return
	// quickly and not call back into Members.
	OnSuspected func()
}

// withDefaults fills the defaults in and checks what memberlist would
// otherwise reject later, less clearly.
func (o Options) withDefaults() (Options, error) {
	if o.NodeName == "" {
		return o, fmt.Errorf("%w: NodeName is empty", ErrInvalidOptions)
	}
	if o.BindAddr == "" {
		o.BindAddr = "0.0.0.0"
	}
	if _, err := netip.ParseAddr(o.BindAddr); err != nil {
		return o, fmt.Errorf("%w: BindAddr %q is not an IP address", ErrInvalidOptions, o.BindAddr)
	}
	if o.AdvertiseAddr != "" {
		if _, err := netip.ParseAddr(o.AdvertiseAddr); err != nil {
			return o, fmt.Errorf("%w: AdvertiseAddr %q is not an IP address", ErrInvalidOptions, o.AdvertiseAddr)
		}
	}
	if o.BindPort == 0 {
		o.BindPort = DefaultBindPort
	}
	if o.AdvertisePort == 0 {
		o.AdvertisePort = o.BindPort
	}
	for name, port := range map[string]int{"BindPort": o.BindPort, "AdvertisePort": o.AdvertisePort} {
		if port < 1 || port > 65535 {
			return o, fmt.Errorf("%w: %s %d is not a port", ErrInvalidOptions, name, port)
		}
	}
	if len(o.SecretKey) > 0 {
		if err := memberlist.ValidateKey(o.SecretKey); err != nil {
			return o, fmt.Errorf("%w: SecretKey: %v", ErrInvalidOptions, err)
		}
	}
	return o, nil
}

// lanConfig is memberlist's LAN configuration with faster failure
// detection, for options already through withDefaults.
func lanConfig(o Options) *memberlist.Config {
	c := memberlist.DefaultLANConfig()
	c.Name = o.NodeName
	c.BindAddr = o.BindAddr
	c.BindPort = o.BindPort
	c.AdvertiseAddr = o.AdvertiseAddr
	c.AdvertisePort = o.AdvertisePort

	c.ProbeInterval = probeInterval
	c.ProbeTimeout = probeTimeout
	c.SuspicionMult = suspicionMult
	c.IndirectChecks = indirectChecks
	c.GossipInterval = gossipInterval
	c.GossipNodes = gossipNodes
	c.RetransmitMult = retransmitMult
	c.PushPullInterval = pushPullInterval
	c.TCPTimeout = tcpTimeout
	c.GossipToTheDeadTime = deadRetention
	// Probes, acks and gossip are a few hundred bytes on a LAN; compressing
	// each (LZW, a fresh writer per message) made the membership the
	// speaker's largest source of garbage. Compressed messages from other
	// members are still read.
	c.EnableCompression = false
	return c
}
