package lab

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadylb/steadylb/test/netns"
)

// Node is one node of the lab: a namespace on both segments, a Node
// object and a speaker Pod object.
type Node struct {
	// Name is the Kubernetes node name, node-<i>.
	Name string
	NS   *netns.NS
	// IPv4 and IPv6 are the node's addresses on segment a.
	IPv4, IPv6 netip.Addr

	lab   *Lab
	index int // i of node-<i>
	macs  map[string]net.HardwareAddr
	ports map[string]string
	fwd   *forwarder
	pods  pods
}

// MAC is the MAC of the node's interface ifname (SegmentA or SegmentB).
func (n *Node) MAC(ifname string) net.HardwareAddr { return n.macs[ifname] }

// PodName is the name of the node's speaker Pod.
func (n *Node) PodName() string { return "speaker-" + n.Name }

// CutLink takes down the bridge port of the node's interface ifname, as a
// pulled cable would: the node sees no carrier, nothing passes. The API
// server stays reachable (see CutAPI).
func (n *Node) CutLink(ifname string) error {
	_, err := n.lab.LAN.Exec("link", "set", n.ports[ifname], "down")
	return err
}

// RestoreLink brings the bridge port of ifname up again.
func (n *Node) RestoreLink(ifname string) error {
	_, err := n.lab.LAN.Exec("link", "set", n.ports[ifname], "up")
	return err
}

// CutAPI stops every byte between the node and the API server (open
// connections hang, new ones get no answer) until RestoreAPI.
func (n *Node) CutAPI() { n.fwd.cut() }

// RestoreAPI lets the node reach the API server again.
func (n *Node) RestoreAPI() { n.fwd.restore() }

// SetLabel sets a label on the Node object; an empty value with remove
// true deletes it.
func (n *Node) SetLabel(ctx context.Context, key, value string, remove bool) error {
	var v any = value
	if remove {
		v = nil
	}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}}
	return n.patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}, patch)
}

func (n *Node) patch(ctx context.Context, obj client.Object, patch map[string]any) error {
	data, err := jsonMarshal(patch)
	if err != nil {
		return err
	}
	if err := n.lab.opts.Env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("lab: patch %s: %w", obj.GetName(), err)
	}
	return nil
}
