package speaker

import "github.com/steadylb/steadylb/internal/speaker/election"

// Candidate is a node that may answer for an address, with the summed
// weight of the preferredNodeSelectors that match it.
type Candidate = election.Candidate

// electOwner picks the node that answers for an address (highest weight,
// then the lowest hash of node and address, then the name). Every speaker
// picks the same one from the same inputs, whatever their order. Decisions
// take it as a parameter so their tests can elect alphabetically.
var electOwner = election.Owner
