//go:build !linux

package layer2

import "errors"

// SystemLinks needs Linux's netlink.
func SystemLinks() ([]Link, error) {
	return nil, errors.New("list links: netlink needs Linux")
}
