package ipam_test

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"go4.org/netipx"

	"github.com/steadylb/steadylb/internal/ipam"
)

func Example() {
	book, err := ipam.New([]ipam.Pool{{
		Name:       "default",
		Ranges:     []netipx.IPRange{netipx.RangeOfPrefix(netip.MustParsePrefix("192.0.2.0/30"))},
		AutoAssign: true,
	}})
	if err != nil {
		panic(err)
	}
	web := ipam.ServiceKey{Namespace: "shop", Name: "web"}
	api := ipam.ServiceKey{Namespace: "shop", Name: "api"}

	// Startup: register what the Services' status says, allocate nothing.
	conflicts := book.Restore([]ipam.Claim{{
		Request: ipam.Request{Service: web, Primary: ipam.IPv4, EligiblePools: []string{"default"}},
		Addrs:   []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		Created: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
	}})
	fmt.Println("conflicts:", len(conflicts))

	// Then serve: web keeps its address, api gets the lowest free one.
	for _, svc := range []ipam.ServiceKey{web, api} {
		a, err := book.Allocate(ipam.Request{Service: svc, Primary: ipam.IPv4, EligiblePools: []string{"default"}})
		fmt.Println(svc, a.Pool, a.Addrs, err)
	}

	// A request that cannot be met says why, with a reason for the condition.
	_, err = book.Allocate(ipam.Request{
		Service:       ipam.ServiceKey{Namespace: "shop", Name: "db"},
		Primary:       ipam.IPv4,
		RequestedIPs:  []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		EligiblePools: []string{"default"},
	})
	fmt.Println(err, errors.Is(err, ipam.ErrRequestedIPInUse))

	st, _ := book.Stats("default")
	fmt.Println("assigned", st.IPv4.Assigned, "available", st.IPv4.Available)
	// Output:
	// conflicts: 0
	// shop/web default [192.0.2.1] <nil>
	// shop/api default [192.0.2.0] <nil>
	// requested IP 192.0.2.1 is in use by service shop/web (cannot share: this service has no allow-shared-ip annotation) true
	// assigned 2 available 2
}
