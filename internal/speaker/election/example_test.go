package election_test

import (
	"fmt"
	"net/netip"

	"github.com/steadylb/steadylb/internal/speaker/election"
)

func ExampleOwner() {
	addr := netip.MustParseAddr("198.51.100.7")
	candidates := []election.Candidate{
		{Node: "worker-1"},
		{Node: "worker-2"},
		{Node: "worker-3"},
	}
	owner, _ := election.Owner(addr, candidates)
	fmt.Println("owner:", owner)

	// Order does not matter: every speaker computes the same owner.
	reversed := []election.Candidate{candidates[2], candidates[1], candidates[0]}
	again, _ := election.Owner(addr, reversed)
	fmt.Println("same owner:", again == owner)

	// A preferredNodeSelectors weight beats the hash.
	candidates[1].Weight = 10
	preferred, _ := election.Owner(addr, candidates)
	fmt.Println("preferred:", preferred)

	_, ok := election.Owner(addr, nil)
	fmt.Println("no candidates:", ok)
	// Output:
	// owner: worker-1
	// same owner: true
	// preferred: worker-2
	// no candidates: false
}
