//go:build !linux

package bfd

import "errors"

// ListenUDP needs Linux's control messages for TTL and packet info.
func ListenUDP(Transport) (PacketConn, error) {
	return nil, errors.New("BFD sockets need Linux")
}
