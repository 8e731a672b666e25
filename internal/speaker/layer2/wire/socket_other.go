//go:build !linux

package wire

import (
	"errors"
	"net"

	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
)

var errNotLinux = errors.New("packet sockets need Linux")

// Listen needs Linux.
func Listen(*net.Interface, ethernet.EtherType, []bpf.Instruction) (*packet.Conn, error) {
	return nil, errNotLinux
}

// ReceiveAllMulticast needs Linux.
func ReceiveAllMulticast(*packet.Conn, int) error { return errNotLinux }

// Drain needs Linux.
func Drain(*packet.Conn) error { return errNotLinux }
