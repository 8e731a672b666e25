package bfd_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-logr/logr"

	"github.com/steadylb/steadylb/internal/speaker/bfd"
)

// A BGP speaker runs one Manager and watches for sessions leaving Up.
func ExampleManager() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := bfd.NewManager(logr.Discard(), bfd.Options{
		OnStateChange: func(ev bfd.Event) {
			if ev.Old == bfd.Up && !ev.PeerAdminDown() {
				fmt.Println("tear down BGP with", ev.Peer.Remote, "because", ev.Diag)
			}
		},
	})
	go m.Start(ctx)
	peer := bfd.Peer{
		Local:   netip.MustParseAddr("198.51.100.2"),
		Remote:  netip.MustParseAddr("198.51.100.1"),
		Profile: bfd.Profile{ReceiveInterval: 300 * time.Millisecond, TransmitInterval: 300 * time.Millisecond, DetectMultiplier: 3},
	}
	if err := m.AddSession(ctx, peer); err != nil {
		fmt.Println(err)
	}
}

func ExampleDecode() {
	wire, _ := bfd.ControlPacket{
		State:                 bfd.Down,
		DetectMult:            3,
		MyDiscriminator:       1,
		DesiredMinTxInterval:  time.Second,
		RequiredMinRxInterval: 300 * time.Millisecond,
	}.Append(nil)
	fmt.Printf("% x\n", wire)

	p, err := bfd.Decode(wire)
	fmt.Println(p.State, p.DesiredMinTxInterval, p.RequiredMinRxInterval, err)

	wire[1] |= 0x04 // the A bit
	_, err = bfd.Decode(wire)
	fmt.Println(err)
	// Output:
	// 20 40 03 18 00 00 00 01 00 00 00 00 00 0f 42 40 00 04 93 e0 00 00 00 00
	// Down 1s 300ms <nil>
	// authentication section present, and authentication is not supported
}
