//go:build !linux

package layer2

import (
	"context"
	"errors"
)

// CarrierWatch needs Linux's netlink.
type CarrierWatch struct{}

// OpenCarrierWatch needs Linux's netlink.
func OpenCarrierWatch() (*CarrierWatch, error) {
	return nil, errors.New("watch links: netlink needs Linux")
}

// Run does nothing off Linux.
func (*CarrierWatch) Run(context.Context, func(int) bool, func(int), func(int), func(string)) error {
	return nil
}
