//go:build !linux

package layer2

import "errors"

// OpenPacketConn needs Linux.
func OpenPacketConn(Link, Protocol) (FrameConn, error) {
	return nil, errors.New("packet sockets need Linux")
}
